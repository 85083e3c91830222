/**
 * The work's result, or undefined once `ms` have passed without it; the work itself goes on. For waits that
 * must not hold their caller longer than a bound (a scrape, a request's audit write) while a database hangs.
 */
export function within<T>(work: Promise<T>, ms: number): Promise<T | undefined> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<undefined>((resolve) => {
    timer = setTimeout(resolve, ms, undefined);
    timer.unref();
  });
  return Promise.race([work, late]).finally(() => clearTimeout(timer));
}

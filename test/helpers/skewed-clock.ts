/**
 * Preloaded (`--import`) into a `conveyor serve` child to give it a wall clock SKEWED_CLOCK_MS away from the
 * machine's, as an instance on a host without NTP has: Date.now() and `new Date()` move, the monotonic clock
 * (performance.now()) does not, as on a real host whose wall clock is set wrong.
 */
const skew = Number(process.env.SKEWED_CLOCK_MS ?? 0);
const RealDate = Date;

class SkewedDate extends RealDate {
  constructor(...args: unknown[]) {
    if (args.length === 0) super(RealDate.now() + skew);
    else super(...(args as [string | number]));
  }
  static override now(): number {
    return RealDate.now() + skew;
  }
  // Dates that Node or a library made with the original constructor are still Dates.
  static [Symbol.hasInstance](value: unknown): boolean {
    return value instanceof RealDate;
  }
}

globalThis.Date = SkewedDate as DateConstructor;

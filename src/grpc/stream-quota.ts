/**
 * Open streams per owner (a user, or a connection when auth is off), at most `max` each. Per instance: each
 * replica counts its own streams.
 */
export class StreamQuota {
  private readonly open = new Map<string, number>();

  constructor(readonly max: number) {}

  /** Takes a slot for `owner`: the function that gives it back, or undefined when all of the owner's are taken. */
  take(owner: string): (() => void) | undefined {
    const held = this.open.get(owner) ?? 0;
    if (held >= this.max) return undefined;
    this.open.set(owner, held + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const left = (this.open.get(owner) ?? 1) - 1;
      if (left === 0) this.open.delete(owner);
      else this.open.set(owner, left);
    };
  }
}

import { useEffect, useState } from 'react';

const pad = (n: number, width = 2) => String(n).padStart(width, '0');

/** A moment as `<input type="datetime-local" step="1">` shows it: the browser's local time, to the second. */
export function toLocalInput(ms: number): string {
  const d = new Date(ms);
  return `${pad(d.getFullYear(), 4)}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}T${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
}

/** The input's value (local time, no offset) as epoch milliseconds; null when empty or not a time. */
export function fromLocalInput(value: string): number | null {
  if (!/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,3})?)?$/.test(value)) return null;
  // A date-time without an offset is local time (ECMAScript Date Time String Format).
  const ms = new Date(value).getTime();
  return Number.isNaN(ms) ? null : ms;
}

/** The current time, moving every `intervalMs`, so limits such as "the window starts 1 h ago" stay true. */
export function useNow(intervalMs = 15_000): number {
  const [now, setNow] = useState(() => Date.now());
  useEffect(() => {
    const timer = setInterval(() => setNow(Date.now()), intervalMs);
    return () => clearInterval(timer);
  }, [intervalMs]);
  return now;
}

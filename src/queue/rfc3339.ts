/** RFC 3339 `date-time` (section 5.6): a full date, `T` (or `t` or a space), a full time with a zone. */
const RFC3339 = /^(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?(?:[Zz]|([+-])(\d{2}):(\d{2}))$/;

const isLeapYear = (year: number) => (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0;

function daysInMonth(year: number, month: number): number {
  if (month === 2) return isLeapYear(year) ? 29 : 28;
  return month === 4 || month === 6 || month === 9 || month === 11 ? 30 : 31;
}

/**
 * Epoch milliseconds of an RFC 3339 timestamp (with a zone), or null when it is not one. Every field is
 * range-checked as RFC 3339 has it (month 01-12, day within its month, February 29 in leap years only, hour
 * 00-23, minute 00-59, offsets up to 23:59), so an impossible date is refused rather than rolled over
 * (`2021-02-30` is not March 2). A leap second (second 60) is refused too: JavaScript time has no place for
 * it. Digits of a fraction beyond milliseconds are dropped.
 */
export function parseRfc3339(value: unknown): number | null {
  if (typeof value !== 'string') return null;
  const match = RFC3339.exec(value);
  if (!match) return null;
  const [year, month, day, hour, minute, second] = match.slice(1, 7).map(Number);
  if (month < 1 || month > 12 || day < 1 || day > daysInMonth(year, month)) return null;
  if (hour > 23 || minute > 59 || second > 59) return null;
  const [, , , , , , , fraction, sign, offsetHour, offsetMinute] = match;
  let offsetMinutes = 0;
  if (sign !== undefined) {
    if (Number(offsetHour) > 23 || Number(offsetMinute) > 59) return null;
    offsetMinutes = (sign === '-' ? -1 : 1) * (Number(offsetHour) * 60 + Number(offsetMinute));
  }
  // setUTCFullYear, not Date.UTC, which reads the years 0-99 as 1900-1999.
  const date = new Date(0);
  date.setUTCFullYear(year, month - 1, day);
  date.setUTCHours(hour, minute, second, fraction === undefined ? 0 : Number(fraction.slice(0, 3).padEnd(3, '0')));
  const ms = date.getTime() - offsetMinutes * 60_000;
  // An offset can carry a time past the years RFC 3339 writes (0000-9999 in UTC): it could not be answered back.
  return ms < FIRST_MS || ms > LAST_MS ? null : ms;
}

const FIRST_MS = Date.parse('0000-01-01T00:00:00.000Z');
const LAST_MS = Date.parse('9999-12-31T23:59:59.999Z');

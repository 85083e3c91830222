/** Timestamps as the API gives them (RFC 3339, UTC) shown in the browser's time zone. */
export function formatTime(iso: string | null | undefined): string {
  if (!iso) return '—';
  const date = new Date(iso);
  return Number.isNaN(date.getTime()) ? iso : date.toLocaleString();
}

/** "3 s", "4 min", "2 h", "5 d": how long ago, or how old. */
export function formatAge(seconds: number | null | undefined): string {
  if (seconds === null || seconds === undefined || !Number.isFinite(seconds)) return '—';
  if (seconds < 60) return `${Math.round(seconds)} s`;
  if (seconds < 3600) return `${Math.round(seconds / 60)} min`;
  if (seconds < 86400) return `${(seconds / 3600).toFixed(1)} h`;
  return `${(seconds / 86400).toFixed(1)} d`;
}

export function formatNumber(n: number | null | undefined): string {
  return n === null || n === undefined ? '—' : n.toLocaleString();
}

/** A payload as a person reads it: pretty-printed when it is JSON, else the text itself. */
export function prettyPayload(payload: string): { text: string; json: boolean } {
  try {
    return { text: JSON.stringify(JSON.parse(payload), null, 2), json: true };
  } catch {
    return { text: payload, json: false };
  }
}

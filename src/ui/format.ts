/**
 * The one rule for every time the UI shows: the browser's own zone, and its name with it ("11/22/2026,
 * 7:00:00 PM GMT+9"). The API speaks UTC and the reader thinks in local time; a time without a zone is read
 * wrongly by one of them. The exact RFC 3339 value stays available: see <Timestamp>.
 */
const dateTime = new Intl.DateTimeFormat(undefined, {
  year: 'numeric',
  month: 'numeric',
  day: 'numeric',
  hour: 'numeric',
  minute: '2-digit',
  second: '2-digit',
  timeZoneName: 'short',
});

/** Timestamps as the API gives them (RFC 3339, UTC) in the browser's time zone, named. */
export function formatTime(iso: string | null | undefined): string {
  if (!iso) return '—';
  const date = new Date(iso);
  return Number.isNaN(date.getTime()) ? iso : dateTime.format(date);
}

/** The browser's time zone as formatTime names it ("UTC", "GMT+9", "EST"); at `ms`, since summer time renames it. */
export function localZoneName(ms = Date.now()): string {
  return dateTime.formatToParts(ms).find((part) => part.type === 'timeZoneName')?.value ?? 'local time';
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

/** JSON's whitespace: anything else outside a string is a token to keep. */
const JSON_SPACE = new Set([' ', '\t', '\n', '\r']);

/**
 * Valid JSON text laid out two spaces per level, as JSON.stringify(value, null, 2) would, but token by token:
 * numbers, escapes and repeated keys stay exactly as stored. A parse and stringify would show
 * 12345678901234567890 as 12345678901234567000, 1.10 as 1.1, and only the last of two equal keys.
 */
function indentJson(text: string): string {
  let out = '';
  let depth = 0;
  let inString = false;
  let escaped = false;
  const newline = () => `\n${'  '.repeat(depth)}`;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (inString) {
      out += c;
      if (escaped) escaped = false;
      else if (c === '\\') escaped = true;
      else if (c === '"') inString = false;
      continue;
    }
    if (JSON_SPACE.has(c)) continue;
    if (c === '{' || c === '[') {
      let next = i + 1;
      while (JSON_SPACE.has(text[next])) next++;
      if (text[next] === (c === '{' ? '}' : ']')) {
        out += c + text[next];
        i = next;
        continue;
      }
      depth++;
      out += c + newline();
    } else if (c === '}' || c === ']') {
      depth--;
      out += newline() + c;
    } else if (c === ',') out += `,${newline()}`;
    else if (c === ':') out += ': ';
    else {
      if (c === '"') inString = true;
      out += c;
    }
  }
  return out;
}

/** A payload as a person reads it: laid out when it is JSON (every token as stored), else the text itself. */
export function prettyPayload(payload: string): { text: string; json: boolean } {
  try {
    JSON.parse(payload);
  } catch {
    return { text: payload, json: false };
  }
  return { text: indentJson(payload), json: true };
}

/**
 * A message's payload as the screens show it. Bytes that are not UTF-8 text come as base64
 * (`payload_encoding`): shown as they are and marked binary, never laid out as JSON ("1234" parses).
 */
export function payloadView(message: { payload: string; payload_encoding?: 'base64' }): { text: string; json: boolean; binary: boolean } {
  if (message.payload_encoding === 'base64') return { text: message.payload, json: false, binary: true };
  return { ...prettyPayload(message.payload), binary: false };
}

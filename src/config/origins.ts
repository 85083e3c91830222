/**
 * `server.cors_allowed_origins`: comma-separated origins, each written exactly as a browser sends it in its
 * Origin header (`https://ui.example.com`, `http://localhost:3000`: scheme, lower-case host, a port only when
 * it is not the scheme's default, no path and no trailing slash), because a request's Origin is compared
 * with them as plain strings. A wildcard is refused: with `*` any page a user opens could read the API from
 * the user's browser, and with auth off (or a token the page can get) that is every message in the queue.
 */
export function parseAllowedOrigins(text: string): string[] {
  const origins: string[] = [];
  for (const item of text.split(',').map((s) => s.trim())) {
    if (item === '') continue;
    if (item === '*' || item.includes('*')) throw new Error('wildcards are not allowed; list each origin, e.g. https://ui.example.com');
    let canonical: string | undefined;
    try {
      const url = new URL(item);
      if (url.protocol === 'http:' || url.protocol === 'https:') canonical = url.origin;
    } catch {
      // not a URL: refused below
    }
    if (canonical === undefined) throw new Error(`"${item}" is not an http(s) origin such as https://ui.example.com`);
    if (canonical !== item) throw new Error(`"${item}" is not written as a browser sends it; use "${canonical}"`);
    if (!origins.includes(item)) origins.push(item);
  }
  return origins;
}

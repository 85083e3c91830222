import type { Handler } from './request.js';

export type Method = 'GET' | 'POST' | 'PUT' | 'DELETE';

/** One route template's chains: one per method, and the one for every other method (its 405). */
interface Entry {
  template: string;
  /** Lower-cased, for a template without parameters: compared as a string. */
  exact?: string;
  pattern?: RegExp;
  names: string[];
  chains: Map<string, Handler[]>;
  otherMethods: Handler[];
}

export interface Match {
  template: string;
  params: Record<string, string>;
  chain: Handler[];
}

const NO_PARAMS: Record<string, string> = Object.freeze({}) as Record<string, string>;

/** A path parameter as express decoded it: %-decoded, a broken escape a 400 (errors.ts maps URIError). */
function decodeParam(value: string): string {
  try {
    return decodeURIComponent(value);
  } catch (err) {
    if (err instanceof URIError) err.message = 'malformed percent-encoding in the URL path';
    throw err;
  }
}

const escapeRegExp = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/**
 * The API's route table: templates such as `/api/messages/:id/ack`, matched the way clients have relied on
 * since the API began (it was express's router): case-insensitively, with one optional trailing slash, a
 * parameter being one non-empty path segment, %-decoded. Templates are tried in the order they were added,
 * the hot message routes first; a template without parameters is a string comparison. HEAD runs the GET chain
 * (node:http sends no body for it).
 */
export class RouteTable {
  private readonly entries: Entry[] = [];

  add(template: string, chains: Map<Method, Handler[]>, otherMethods: Handler[]): void {
    const names: string[] = [];
    const source = template
      .split('/')
      .map((segment) => {
        if (!segment.startsWith(':')) return escapeRegExp(segment);
        names.push(segment.slice(1));
        return '([^/]+)';
      })
      .join('/');
    const entry: Entry = { template, names, chains: new Map(chains), otherMethods };
    if (names.length === 0) entry.exact = template.toLowerCase();
    else entry.pattern = new RegExp(`^${source}/?$`, 'i');
    const get = chains.get('GET');
    if (get && !chains.has('HEAD' as Method)) entry.chains.set('HEAD', get);
    this.entries.push(entry);
  }

  /** `METHOD /template` of every route, in order. */
  routes(): string[] {
    return this.entries.flatMap((e) => [...e.chains.keys()].filter((m) => m !== 'HEAD').map((m) => `${m} ${e.template}`));
  }

  /** The route for a path, or undefined when no template matches; throws a URIError for a broken %-escape. */
  match(method: string, path: string): Match | undefined {
    let lower: string | undefined;
    for (const entry of this.entries) {
      let params = NO_PARAMS;
      if (entry.exact !== undefined) {
        lower ??= path.toLowerCase();
        if (lower !== entry.exact && lower !== `${entry.exact}/`) continue;
      } else {
        const found = entry.pattern!.exec(path);
        if (found === null) continue;
        params = {};
        for (let i = 0; i < entry.names.length; i++) params[entry.names[i]] = decodeParam(found[i + 1]);
      }
      return { template: entry.template, params, chain: entry.chains.get(method) ?? entry.otherMethods };
    }
    return undefined;
  }
}

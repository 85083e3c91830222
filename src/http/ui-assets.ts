import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, extname, join, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';
import type { IncomingMessage, ServerResponse } from 'node:http';

/**
 * The admin UI's files (built by `npm run build` into dist/ui), held in memory and served by the API port at
 * `/`. Everything the UI needs is in that directory: scripts, styles, fonts and icons are bundled, so the
 * page asks nothing of any other origin, and the Content-Security-Policy says so.
 */

/**
 * Scripts and styles only from the service's own files (no inline script, no eval), requests only to the
 * service itself, no frames, plugins or foreign form targets. Inline `style` attributes set through the DOM
 * (React's `style` prop, the chart library) are CSSOM writes, which `style-src 'self'` allows.
 */
export const UI_CONTENT_SECURITY_POLICY = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "font-src 'self'",
  "connect-src 'self'",
  "manifest-src 'self'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ');

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.woff2': 'font/woff2',
  '.json': 'application/json; charset=utf-8',
  '.txt': 'text/plain; charset=utf-8',
};

interface Asset {
  type: string;
  body: Buffer;
  gzipped?: Buffer;
  etag: string;
  /** Vite names bundles by content hash (assets/index-3f2a1b.js): they never change under the same name. */
  immutable: boolean;
}

export interface UiAssets {
  /** Answers GET and HEAD for the UI's paths; false when the path is not one of its files. */
  serve(req: IncomingMessage, res: ServerResponse, path: string): boolean;
  readonly available: boolean;
}

/** dist/ui beside the package root, found from this file whether it runs compiled (dist/src/http) or from src/http. */
export function defaultUiDirectory(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  while (!existsSync(join(dir, 'package.json')) && dirname(dir) !== dir) dir = dirname(dir);
  return join(dir, 'dist', 'ui');
}

function filesUnder(root: string): string[] {
  if (!existsSync(root)) return [];
  const out: string[] = [];
  const walk = (dir: string) => {
    for (const name of readdirSync(dir)) {
      const full = join(dir, name);
      if (statSync(full).isDirectory()) walk(full);
      else out.push(full);
    }
  };
  walk(root);
  return out;
}

export function loadUiAssets(root: string = defaultUiDirectory()): UiAssets {
  const assets = new Map<string, Asset>();
  for (const file of filesUnder(root)) {
    const urlPath = `/${relative(root, file).split(sep).join('/')}`;
    const body = readFileSync(file);
    const type = TYPES[extname(file)] ?? 'application/octet-stream';
    const compressible = /text|javascript|json|svg/.test(type) && body.length > 1024;
    assets.set(urlPath, {
      type,
      body,
      gzipped: compressible ? gzipSync(body, { level: 9 }) : undefined,
      etag: `"${createHash('sha256').update(body).digest('base64url').slice(0, 27)}"`,
      immutable: urlPath.startsWith('/assets/'),
    });
  }
  const index = assets.get('/index.html');
  if (index) assets.set('/', index);

  return {
    available: index !== undefined,
    serve(req, res, path) {
      if (req.method !== 'GET' && req.method !== 'HEAD') return false;
      const asset = assets.get(path);
      if (!asset) return false;
      res.setHeader('Content-Type', asset.type);
      res.setHeader('Content-Security-Policy', UI_CONTENT_SECURITY_POLICY);
      res.setHeader('X-Frame-Options', 'DENY');
      res.setHeader('ETag', asset.etag);
      // The page itself is checked on every load (a new build must reach browsers); hashed bundles never change.
      res.setHeader('Cache-Control', asset.immutable ? 'public, max-age=31536000, immutable' : 'no-cache');
      // Added to, not replacing, a Vary: Origin that CORS set (a cache must not hand one origin's answer to another).
      const vary = res.getHeader('Vary');
      res.setHeader('Vary', vary ? `${String(vary)}, Accept-Encoding` : 'Accept-Encoding');
      if (req.headers['if-none-match'] === asset.etag) {
        res.statusCode = 304;
        res.end();
        return true;
      }
      const gzip = asset.gzipped !== undefined && /\bgzip\b/.test(String(req.headers['accept-encoding'] ?? ''));
      const body = gzip ? asset.gzipped! : asset.body;
      if (gzip) res.setHeader('Content-Encoding', 'gzip');
      res.setHeader('Content-Length', body.length);
      res.statusCode = 200;
      res.end(req.method === 'HEAD' ? undefined : body);
      return true;
    },
  };
}

import { fileURLToPath } from 'node:url';
import react from '@vitejs/plugin-react';
import { defineConfig } from 'vite';

/**
 * The admin UI, built into dist/ui and served by `conveyor serve` at `/` (src/http/ui-assets.ts).
 * `base: './'`: every asset URL is relative to the page, so the UI works under any path prefix an Ingress
 * puts in front of it (`https://host/conveyor/`), and so does the API client (src/ui/api/client.ts).
 */
export default defineConfig(({ command }) => ({
  root: fileURLToPath(new URL('.', import.meta.url)),
  base: './',
  plugins: [react()],
  // A build is always the production bundle, also when NODE_ENV says otherwise (vitest sets `test`, and its
  // global setup builds the UI the browser suites drive): React's development build is 50% larger, and the
  // development JSX transform writes every source file's absolute path into the bundle.
  define: command === 'build' ? { 'process.env.NODE_ENV': JSON.stringify('production') } : {},
  oxc: command === 'build' ? { jsx: { development: false } } : undefined,
  build: {
    outDir: fileURLToPath(new URL('../../dist/ui', import.meta.url)),
    emptyOutDir: true,
    // No data: URLs for scripts or styles; small images may still be inlined (img-src allows data:).
    assetsInlineLimit: 0,
    sourcemap: false,
  },
  server: {
    // `npm run dev:ui`: the UI with hot reload, talking to a `conveyor serve` on :8080.
    proxy: { '/api': 'http://localhost:8080', '/metrics': 'http://localhost:8080' },
  },
}));

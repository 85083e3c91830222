import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { engineByName } from './helpers/engines.js';
import { startTestServer, type TestServer } from './helpers/server.js';

/**
 * The shell examples of README.md and docs/*.md, run as a reader would: every ```sh block of a page, in order,
 * in one bash session against a fresh server, with each `# → <status> <body>` line checked against what the
 * commands before it answered. docs/testing.md states the conventions.
 */

interface Chunk {
  file: string;
  line: number;
  code: string;
  expect?: string;
}

interface Page {
  file: string;
  chunks: Chunk[];
  auth: boolean;
}

const WILDCARD = '\u0000any';

function pages(): Page[] {
  const files = ['README.md', ...readdirSync('docs').filter((f) => f.endsWith('.md')).map((f) => `docs/${f}`)];
  return files
    .map((file) => {
      const text = readFileSync(file, 'utf8');
      const lines = text.split('\n');
      const chunks: Chunk[] = [];
      let inBlock: 'run' | 'other' | undefined;
      let current: string[] = [];
      let startLine = 0;
      const flush = (expect?: string) => {
        if (current.some((l) => l.trim() !== '' && !l.trim().startsWith('#')) || expect !== undefined) {
          chunks.push({ file, line: startLine, code: current.join('\n'), expect });
        }
        current = [];
      };
      lines.forEach((line, index) => {
        const fence = /^```(.*)$/.exec(line);
        if (fence && inBlock === undefined) {
          inBlock = fence[1].trim() === 'sh' ? 'run' : 'other';
          startLine = index + 2;
          return;
        }
        if (fence && inBlock !== undefined) {
          if (inBlock === 'run') flush();
          inBlock = undefined;
          return;
        }
        if (inBlock !== 'run') return;
        const expectation = /^# → ?(.*)$/.exec(line);
        if (expectation) {
          flush(expectation[1].trim());
          startLine = index + 2;
          return;
        }
        if (current.length === 0) startLine = index + 1;
        current.push(line);
      });
      return { file, chunks, auth: /<!-- docs-test: auth -->/.test(text) };
    })
    .filter((page) => page.chunks.length > 0);
}

/** `"…"` in a documented body stands for any value. */
function parseExpectedJson(text: string): unknown {
  return JSON.parse(text.replaceAll('"…"', JSON.stringify(WILDCARD)));
}

function matches(expected: unknown, actual: unknown): boolean {
  if (expected === WILDCARD) return actual !== undefined;
  if (Array.isArray(expected)) return Array.isArray(actual) && actual.length === expected.length && expected.every((e, i) => matches(e, actual[i]));
  if (expected !== null && typeof expected === 'object') {
    return actual !== null && typeof actual === 'object' && Object.entries(expected).every(([k, v]) => matches(v, (actual as Record<string, unknown>)[k]));
  }
  return expected === actual;
}

interface Outcome {
  stdout: string;
  stderr: string;
  rc: number;
}

/** Commands a `sh` block must not run against the working tree: such blocks are tagged `no-run`. */
const UNSAFE = /\bnpm (ci|install|run (bench|build|start))\b|\brm -r|\bdocker\b|\bhelm\b|\bkubectl\b/;

/**
 * Runs a page's chunks in one bash session; curl reports each status on stderr, leaving stdout as shown.
 * Asynchronous: the server answering the commands lives in this process.
 */
async function runPage(page: Page, port: number): Promise<Outcome[]> {
  const unsafe = page.chunks.find((chunk) => UNSAFE.test(chunk.code));
  if (unsafe) throw new Error(`${unsafe.file}:${unsafe.line} would change this machine or needs a cluster; tag its block \`sh no-run\`:\n${unsafe.code}`);
  const dir = mkdtempSync(join(tmpdir(), 'conveyor-docs-'));
  const script = [
    `curl() { command curl --write-out '%{stderr}%{http_code}\\n' "$@"; }`,
    ...page.chunks.map((chunk, i) => {
      const code = chunk.code.replaceAll('localhost:8080', `127.0.0.1:${port}`);
      return `{\n${code}\n} >"${dir}/out.${i}" 2>"${dir}/err.${i}"; echo $? >"${dir}/rc.${i}"`;
    }),
  ].join('\n');
  await new Promise<void>((resolve, reject) => {
    // Its own process group, so a runaway example is killed with everything it started.
    const bash = spawn('bash', ['-c', script], { cwd: process.cwd(), stdio: 'ignore', detached: true });
    const timer = setTimeout(() => process.kill(-bash.pid!, 'SIGKILL'), 45_000);
    bash.on('error', reject);
    bash.on('exit', () => {
      clearTimeout(timer);
      resolve();
    });
  });
  return page.chunks.map((_, i) => {
    const read = (name: string) => (existsSync(`${dir}/${name}.${i}`) ? readFileSync(`${dir}/${name}.${i}`, 'utf8') : '');
    return { stdout: read('out'), stderr: read('err'), rc: Number(read('rc').trim() || '-1') };
  });
}

/** What is wrong with one chunk's outcome, or undefined when it answered as documented. */
function problem(chunk: Chunk, outcome: Outcome): string | undefined {
  if (outcome.rc !== 0) return `exit code ${outcome.rc}`;
  if (chunk.expect === undefined) return undefined;
  const expectation = /^(\d{3})?\s*(.*)$/.exec(chunk.expect)!;
  const [, status, rest] = expectation;
  let body = outcome.stdout;
  if (body.startsWith('HTTP/')) body = body.slice(body.indexOf('\r\n\r\n') + 4);
  // A command that shows its status itself (`curl -w ' %{http_code}\n'`, the README's tour) prints it after
  // the body; its own --write-out replaces the one the wrapper adds, so the status is read from there.
  let shown: string | undefined;
  if (chunk.code.includes('%{http_code}')) {
    const tail = /(?:^| )(\d{3})\n?$/.exec(body);
    if (!tail) return `no status after the output: ${body.slice(-200)}`;
    shown = tail[1];
    body = body.slice(0, tail.index);
  }
  if (status) {
    const statuses = outcome.stderr.split('\n').filter((l) => /^\d{3}$/.test(l.trim()));
    const fromStdout = /^(\d{3})\s*$/m.exec(body)?.[1];
    const actual = shown ?? statuses.at(-1)?.trim() ?? fromStdout;
    if (actual !== status) return `status ${actual ?? 'none'}, documented ${status}`;
  }
  if (rest.startsWith('{') || rest.startsWith('[')) {
    let actual: unknown;
    try {
      actual = JSON.parse(body);
    } catch {
      return `the output is not JSON: ${body.slice(0, 300)}`;
    }
    if (!matches(parseExpectedJson(rest), actual)) return `body ${body.trim().slice(0, 600)}\ndocumented ${rest}`;
  } else if (rest !== '' && !body.includes(rest)) {
    return `output ${body.trim().slice(0, 300)} lacks "${rest}"`;
  }
  return undefined;
}

const AUTH = {
  enabled: true,
  jwt_secret: 'docs-test-secret-that-is-long-enough-0123456789',
  username: 'admin',
  password: 'change-me-please',
  // docs/auth.md, Access keys: its walk-through creates and revokes one.
  credentials_key: Buffer.alloc(32, 5).toString('base64'),
};

describe('the shell examples of the docs run as documented', () => {
  for (const page of pages()) {
    describe(page.file, () => {
      let server: TestServer;
      beforeAll(async () => {
        server = await startTestServer(engineByName.sqlite, { overrides: page.auth ? { auth: AUTH } : {} });
      });
      afterAll(async () => {
        await server?.close();
      });

      it(`answers every "# →" line (${page.chunks.filter((c) => c.expect !== undefined).length} checks)`, async () => {
        const outcomes = await runPage(page, server.server.httpPort);
        const failures = page.chunks.flatMap((chunk, i) => {
          const wrong = problem(chunk, outcomes[i]);
          return wrong ? [`${chunk.file}:${chunk.line}\n${chunk.code}\n→ ${wrong}\n${outcomes[i].stderr.trim()}`] : [];
        });
        expect(failures, failures.join('\n\n')).toEqual([]);
      });
    });
  }
});

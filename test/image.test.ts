/**
 * The container image, proven without a Docker engine.
 *
 * The Dockerfile is the single list of what goes into the image: this file parses it, checks what a reviewer
 * would check (stages, user, entrypoint, labels, .dockerignore), then rebuilds the image's /app directory in a
 * temporary directory exactly as the stages do: the build stage's context files plus `npm run build`; the
 * deps stage's context files plus its `npm ci --omit=dev` line, run verbatim; the runtime stage's COPY lines,
 * each mapped from the stage it names. Every command is then started from that directory with the image's
 * ENTRYPOINT arguments and nothing else on the module path, so a runtime import of a dev dependency, a missing
 * proto file or a missing package.json fails here the way it would fail in the container.
 *
 * The temporary directory lives outside the repository, so Node cannot resolve the repository's
 * node_modules from it. The image runs Node 22; this test runs the local Node (>= 20), which the native
 * modules are compiled for by that same `npm ci`.
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, symlinkSync } from 'node:fs';
import { builtinModules } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join, posix, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const ROOT = resolve(fileURLToPath(new URL('..', import.meta.url)));
const PKG = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {
  version: string;
  dependencies: Record<string, string>;
  devDependencies: Record<string, string>;
};

// ---------------------------------------------------------------------------------------------------------------
// Dockerfile parsing

interface Instruction {
  op: string;
  args: string;
  line: number;
}
interface Stage {
  name: string;
  from: string;
  instructions: Instruction[];
  workdir: string;
}

/** Joins continuation lines, drops comments and splits the file into stages (FROM ... AS name). */
function parseDockerfile(text: string): { args: Record<string, string>; stages: Stage[] } {
  const logical: Array<{ text: string; line: number }> = [];
  let current: { text: string; line: number } | undefined;
  text.split('\n').forEach((raw, index) => {
    const trimmed = raw.trim();
    if (current === undefined && (trimmed === '' || trimmed.startsWith('#'))) return;
    if (current !== undefined && trimmed.startsWith('#')) return;
    const continued = trimmed.endsWith('\\');
    const body = continued ? trimmed.slice(0, -1).trim() : trimmed;
    if (current === undefined) current = { text: body, line: index + 1 };
    else current.text += ` ${body}`;
    if (!continued) {
      logical.push(current);
      current = undefined;
    }
  });
  const args: Record<string, string> = {};
  const stages: Stage[] = [];
  for (const { text: entry, line } of logical) {
    const match = /^(\S+)\s+([\s\S]*)$/.exec(entry);
    if (!match) throw new Error(`Dockerfile line ${line}: cannot parse "${entry}"`);
    const op = match[1].toUpperCase();
    const rest = match[2].trim();
    if (op === 'FROM') {
      const from = /^(\S+)(?:\s+AS\s+(\S+))?$/i.exec(rest);
      if (!from) throw new Error(`Dockerfile line ${line}: cannot parse FROM`);
      const image = from[1].replace(/\$\{(\w+)\}/g, (_, name: string) => args[name] ?? '');
      stages.push({ name: from[2] ?? String(stages.length), from: image, instructions: [], workdir: '/' });
      continue;
    }
    if (stages.length === 0) {
      if (op === 'ARG') {
        const [name, value = ''] = rest.split('=');
        args[name] = value;
      }
      continue;
    }
    const stage = stages[stages.length - 1];
    if (op === 'WORKDIR') stage.workdir = posix.resolve(stage.workdir, rest);
    stage.instructions.push({ op, args: rest, line });
  }
  return { args, stages };
}

interface Copy {
  from?: string;
  sources: string[];
  dest: string;
  /** The stage's WORKDIR when the COPY runs, for a relative destination. */
  workdir: string;
}

function copiesOf(stage: Stage): Copy[] {
  const copies: Copy[] = [];
  let workdir = '/';
  for (const ins of stage.instructions) {
    if (ins.op === 'WORKDIR') workdir = posix.resolve(workdir, ins.args);
    if (ins.op !== 'COPY') continue;
    const words = ins.args.split(/\s+/);
    let from: string | undefined;
    while (words[0]?.startsWith('--')) {
      const flag = words.shift()!;
      if (flag.startsWith('--from=')) from = flag.slice('--from='.length);
      else throw new Error(`Dockerfile line ${ins.line}: COPY flag ${flag} is not understood by this test`);
    }
    const dest = words.pop()!;
    copies.push({ from, sources: words, dest, workdir });
  }
  return copies;
}

function runsOf(stage: Stage): string[] {
  return stage.instructions.filter((i) => i.op === 'RUN').map((i) => i.args);
}

function jsonArray(stage: Stage, op: string): string[] {
  const ins = stage.instructions.filter((i) => i.op === op).pop();
  if (!ins) return [];
  const parsed = JSON.parse(ins.args) as unknown;
  if (!Array.isArray(parsed)) throw new Error(`${op} must use the JSON (exec) form so no shell sits between tini and node`);
  return parsed as string[];
}

function envOf(stage: Stage): Record<string, string> {
  const env: Record<string, string> = {};
  for (const ins of stage.instructions.filter((i) => i.op === 'ENV')) {
    for (const m of ins.args.matchAll(/(\w+)=("[^"]*"|\S+)/g)) env[m[1]] = m[2].replace(/^"|"$/g, '');
  }
  return env;
}

/** .dockerignore semantics as far as this repository uses them: ordered patterns, `!` re-includes, last match wins. */
function dockerIgnored(patterns: string[], path: string): boolean {
  const toRegex = (pattern: string) =>
    new RegExp(
      `^${pattern
        .replace(/\/$/, '')
        .split('/')
        .map((part) => (part === '**' ? '(?:.*)' : part.replace(/[.+^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '[^/]*').replace(/\?/g, '[^/]')))
        .join('/')
        .replace(/\(\?:\.\*\)\//g, '(?:.*/)?')}(?:/.*)?$`,
    );
  let ignored = false;
  for (const raw of patterns) {
    const negate = raw.startsWith('!');
    const pattern = negate ? raw.slice(1) : raw;
    if (toRegex(pattern).test(path)) ignored = !negate;
  }
  return ignored;
}

// ---------------------------------------------------------------------------------------------------------------
// Running things

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

function run(command: string, args: string[], options: { cwd: string; env: NodeJS.ProcessEnv; timeout: number }): Promise<Run> {
  return new Promise((resolvePromise) => {
    execFile(command, args, { ...options, maxBuffer: 64 * 1024 * 1024 }, (err, stdout, stderr) => {
      const code = err ? ((err as { code?: unknown }).code as number | undefined) ?? 1 : 0;
      resolvePromise({ code: typeof code === 'number' ? code : 1, stdout, stderr });
    });
  });
}

/** The processes of the image get a minimal environment: no NODE_PATH, NODE_OPTIONS or npm_* variables from vitest. */
function cleanEnv(home: string, extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  return { PATH: process.env.PATH, HOME: home, TMPDIR: join(home, 'tmp'), ...extra };
}

const dockerfileText = readFileSync(join(ROOT, 'Dockerfile'), 'utf8');
const dockerfile = parseDockerfile(dockerfileText);
const stageByName = new Map(dockerfile.stages.map((s) => [s.name, s]));
const runtime = dockerfile.stages[dockerfile.stages.length - 1];
const dockerignore = readFileSync(join(ROOT, '.dockerignore'), 'utf8')
  .split('\n')
  .map((l) => l.trim())
  .filter((l) => l !== '' && !l.startsWith('#'));

/** The stage the runtime stage takes node_modules from, and the one it takes dist/ from. */
function sourceStage(path: string): Stage {
  const copy = copiesOf(runtime).find((c) => c.sources.some((s) => s.split('/').includes(path)));
  if (!copy?.from) throw new Error(`the runtime stage copies no ${path} from another stage`);
  const stage = stageByName.get(copy.from);
  if (!stage) throw new Error(`COPY --from=${copy.from}: no such stage`);
  return stage;
}

describe('Dockerfile', () => {
  it('is multi-stage on a current Node LTS slim base, the runtime stage last and free of compilers', () => {
    expect(dockerfile.stages.map((s) => s.name)).toEqual(['build', 'deps', 'runtime']);
    for (const stage of dockerfile.stages) {
      const m = /^node:(\d+)-bookworm-slim$/.exec(stage.from);
      expect(m, `${stage.name} FROM ${stage.from}`).not.toBeNull();
      const major = Number(m![1]);
      expect(major % 2, 'an LTS (even) Node major').toBe(0);
      expect(major).toBeGreaterThanOrEqual(22);
    }
    const runtimeRuns = runsOf(runtime).join('\n');
    expect(runtimeRuns).not.toMatch(/\b(python3|make|g\+\+|build-essential|gcc)\b/);
    expect(runtimeRuns).not.toMatch(/npm (ci|install)/);
    expect(runtimeRuns).toMatch(/install -y --no-install-recommends tini/);
    for (const name of ['build', 'deps']) expect(runsOf(stageByName.get(name)!).join('\n')).toMatch(/python3 make g\+\+/);
  });

  it('builds dist/ with dev dependencies and takes node_modules from an `npm ci --omit=dev` stage', () => {
    const build = sourceStage('dist');
    expect(runsOf(build)).toContain('npm ci --no-audit --no-fund');
    expect(runsOf(build)).toContain('npm run build');
    const deps = sourceStage('node_modules');
    const ci = runsOf(deps).filter((r) => /\bnpm ci\b/.test(r));
    expect(ci).toHaveLength(1);
    expect(ci[0]).toMatch(/^npm ci --omit=dev\b/);
    // The runtime stage copies only these: production node_modules, compiled JavaScript, the built admin UI,
    // package.json, proto.
    expect(copiesOf(runtime).map((c) => `${c.from ?? 'context'}:${c.sources.join(' ')}`)).toEqual([
      'deps:/app/node_modules',
      'build:/build/dist/src',
      'build:/build/dist/migrations',
      'build:/build/dist/ui',
      'context:package.json',
      'context:proto',
    ]);
  });

  it('runs as a numeric non-root user with tini as PID 1 and the young-generation flag', () => {
    const users = runtime.instructions.filter((i) => i.op === 'USER');
    expect(users).toHaveLength(1);
    const [uid, gid] = users[0].args.split(':');
    expect(uid).toMatch(/^\d+$/);
    expect(Number(uid)).toBeGreaterThan(0);
    expect(gid).toMatch(/^\d+$/);
    // USER comes after every RUN, so nothing runs as root after it.
    const userIndex = runtime.instructions.indexOf(users[0]);
    expect(runtime.instructions.slice(userIndex + 1).filter((i) => i.op === 'RUN')).toEqual([]);
    // The only path the user owns is /data (mounted as a volume in Kubernetes); /app/data points at it.
    expect(runsOf(runtime).join('\n')).toMatch(new RegExp(`chown ${uid}:${gid} /data\\b`));
    expect(runsOf(runtime).join('\n')).toMatch(/ln -s \/data \/app\/data/);

    const entrypoint = jsonArray(runtime, 'ENTRYPOINT');
    const cmd = jsonArray(runtime, 'CMD');
    expect(entrypoint.slice(0, 2)).toEqual(['/usr/bin/tini', '--']);
    expect(entrypoint.slice(2)).toEqual(['node', '--max-semi-space-size=64', '/app/dist/src/cli.js']);
    expect(cmd).toEqual(['serve']);
    expect(envOf(runtime).NODE_OPTIONS).toBeUndefined();
    expect(envOf(runtime).NODE_ENV).toBe('production');
    expect(runtime.workdir).toBe('/app');
  });

  it('carries OCI labels and exposes the service ports', () => {
    const labels = runtime.instructions.filter((i) => i.op === 'LABEL').map((i) => i.args).join(' ');
    for (const key of ['title', 'description', 'version', 'revision', 'licenses']) {
      expect(labels).toMatch(new RegExp(`org\\.opencontainers\\.image\\.${key}=`));
    }
    expect(labels).toContain(`org.opencontainers.image.licenses="${JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')).license}"`);
    expect(runtime.instructions.find((i) => i.op === 'ARG' && i.args.startsWith('VERSION='))?.args).toBe(`VERSION=${PKG.version}`);
    const exposed = runtime.instructions.filter((i) => i.op === 'EXPOSE').flatMap((i) => i.args.split(/\s+/));
    expect(exposed).toEqual(expect.arrayContaining(['8080', '50051', '9090', '8081']));
  });

  it('.dockerignore lets in exactly what the stages copy from the context, and no node_modules', () => {
    const contextSources = dockerfile.stages.flatMap((s) => copiesOf(s).filter((c) => !c.from).flatMap((c) => c.sources));
    for (const source of contextSources) {
      expect(existsSync(join(ROOT, source)), source).toBe(true);
      expect(dockerIgnored(dockerignore, source), `${source} is ignored`).toBe(false);
    }
    for (const excluded of ['node_modules', 'dist', 'test/ack.test.ts', 'charts/conveyor/Chart.yaml', '.git/HEAD', 'data/conveyor.db', 'src/node_modules/x', 'bench/run.ts']) {
      expect(dockerIgnored(dockerignore, excluded), `${excluded} is sent to the builder`).toBe(true);
    }
    // Every top-level entry of the repository that is not copied is ignored (an allow-list).
    const allowed = new Set(contextSources.map((s) => s.split('/')[0]));
    for (const entry of readdirSync(ROOT)) {
      if (!allowed.has(entry)) expect(dockerIgnored(dockerignore, entry), `${entry} is sent to the builder`).toBe(true);
    }
  });
});

// ---------------------------------------------------------------------------------------------------------------
// The image's /app, rebuilt and started

describe('the image contents, assembled from the Dockerfile and started without dev dependencies', () => {
  let work: string;
  let app: string; // the runtime stage's /app
  let entry: string[]; // node arguments of the ENTRYPOINT, paths mapped into `app`
  let baseEnv: NodeJS.ProcessEnv;

  /** Copies a COPY's context sources into `dir` as seen from the stage's WORKDIR. */
  function copyFromContext(copy: Copy, stageRoot: string, stageWorkdir: string) {
    for (const source of copy.sources) {
      const destPath = copy.dest.endsWith('/') || copy.sources.length > 1 ? posix.join(posix.resolve(copy.workdir, copy.dest), posix.basename(source)) : posix.resolve(copy.workdir, copy.dest);
      const target = join(stageRoot, posix.relative(stageWorkdir, destPath));
      mkdirSync(dirname(target), { recursive: true });
      cpSync(join(ROOT, source), target, { recursive: true });
    }
  }

  function assembleStage(stage: Stage, root: string) {
    mkdirSync(root, { recursive: true });
    for (const copy of copiesOf(stage)) {
      if (copy.from) continue;
      copyFromContext(copy, root, stage.workdir);
    }
  }

  beforeAll(async () => {
    work = mkdtempSync(join(tmpdir(), 'conveyor-image-'));
    mkdirSync(join(work, 'home', 'tmp'), { recursive: true });
    const roots = new Map<string, string>();

    // build stage: its context files, the repository's dev node_modules (npm ci of the same lock file), npm run build.
    const build = sourceStage('dist');
    const buildRoot = join(work, build.name);
    roots.set(build.name, buildRoot);
    assembleStage(build, buildRoot);
    symlinkSync(join(ROOT, 'node_modules'), join(buildRoot, 'node_modules'), 'dir');
    for (const cmd of runsOf(build).filter((r) => r.startsWith('npm run '))) {
      const result = await run('sh', ['-c', cmd], { cwd: buildRoot, env: { ...process.env }, timeout: 180_000 });
      expect(result.code, `${build.name}: ${cmd}\n${result.stdout}\n${result.stderr}`).toBe(0);
    }

    // deps stage: its context files and its RUN lines verbatim (apt-get lines are the image's, not ours).
    const deps = sourceStage('node_modules');
    const depsRoot = join(work, deps.name);
    roots.set(deps.name, depsRoot);
    assembleStage(deps, depsRoot);
    for (const cmd of runsOf(deps).filter((r) => r.startsWith('npm '))) {
      // npm keeps the machine's own configuration (HOME, ~/.npmrc: registry, proxy, node headers) and cache.
      const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !/^(npm_|NODE_OPTIONS$|NODE_PATH$|VITEST)/i.test(k)));
      const result = await run('sh', ['-c', cmd], { cwd: depsRoot, env, timeout: 280_000 });
      expect(result.code, `${deps.name}: ${cmd}\n${result.stdout}\n${result.stderr}`).toBe(0);
    }

    // runtime stage: each COPY from its stage (paths inside a stage map through its WORKDIR) or the context.
    app = join(work, 'app');
    mkdirSync(app, { recursive: true });
    for (const copy of copiesOf(runtime)) {
      if (!copy.from) {
        copyFromContext(copy, app, runtime.workdir);
        continue;
      }
      const stage = stageByName.get(copy.from)!;
      const stageRoot = roots.get(stage.name)!;
      for (const source of copy.sources) {
        const rel = posix.relative(stage.workdir, source);
        expect(rel.startsWith('..'), `${source} lies outside ${stage.name}'s WORKDIR`).toBe(false);
        const target = join(app, posix.relative(runtime.workdir, posix.resolve(copy.workdir, copy.dest)));
        mkdirSync(dirname(target), { recursive: true });
        cpSync(join(stageRoot, rel), target, { recursive: true, verbatimSymlinks: true });
      }
    }

    const [node, ...nodeArgs] = jsonArray(runtime, 'ENTRYPOINT').slice(2);
    expect(node).toBe('node');
    entry = nodeArgs.map((a) => (a.startsWith(`${runtime.workdir}/`) ? join(app, posix.relative(runtime.workdir, a)) : a));
    baseEnv = cleanEnv(join(work, 'home'), { ...envOf(runtime), CONVEYOR_LOG_LEVEL: 'info' });
  }, 420_000);

  afterAll(() => {
    if (work) rmSync(work, { recursive: true, force: true });
  });

  const conveyor = (args: string[], env: Record<string, string> = {}) =>
    run(process.execPath, [...entry, ...args], { cwd: app, env: { ...baseEnv, ...env }, timeout: 60_000 });

  it('holds only production dependencies and compiled code', () => {
    const lock = JSON.parse(readFileSync(join(ROOT, 'package-lock.json'), 'utf8')) as { packages: Record<string, { dev?: boolean }> };
    const devOnly = Object.entries(lock.packages).filter(([path, meta]) => path.startsWith('node_modules/') && meta.dev);
    expect(devOnly.length).toBeGreaterThan(0);
    for (const [path] of devOnly) expect(existsSync(join(app, path)), `${path} (a dev dependency) is in the image`).toBe(false);
    for (const name of Object.keys(PKG.dependencies)) expect(existsSync(join(app, 'node_modules', name)), name).toBe(true);
    expect(readdirSync(app).sort()).toEqual(['dist', 'node_modules', 'package.json', 'proto']);
    expect(readdirSync(join(app, 'dist')).sort()).toEqual(['migrations', 'src', 'ui']);
    expect(existsSync(join(app, 'dist', 'ui', 'index.html'))).toBe(true);
    expect(existsSync(join(app, 'proto', 'queue.proto'))).toBe(true);
    // No TypeScript sources or tests in the image.
    const files: string[] = [];
    const walk = (dir: string) => {
      for (const name of readdirSync(dir)) {
        const p = join(dir, name);
        if (statSync(p).isDirectory()) walk(p);
        else files.push(relative(app, p));
      }
    };
    walk(join(app, 'dist'));
    expect(files.filter((f) => f.endsWith('.ts') && !f.endsWith('.d.ts'))).toEqual([]);
    expect(files.some((f) => f === join('dist', 'src', 'cli.js'))).toBe(true);
  });

  it('imports nothing at run time but Node built-ins, production dependencies and its own files', () => {
    const allowed = new Set(Object.keys(PKG.dependencies));
    const builtins = new Set(builtinModules);
    const offenders: string[] = [];
    const walk = (dir: string) => {
      for (const name of readdirSync(dir)) {
        const p = join(dir, name);
        if (statSync(p).isDirectory()) walk(p);
        else if (p.endsWith('.js')) {
          const code = readFileSync(p, 'utf8');
          for (const m of code.matchAll(/(?:\bfrom\s*|\bimport\s*\(\s*|\bimport\s+|\brequire\s*\(\s*)['"]([^'"]+)['"]/g)) {
            const spec = m[1];
            if (spec.startsWith('.') || spec.startsWith('node:') || builtins.has(spec)) continue;
            const pkg = spec.startsWith('@') ? spec.split('/').slice(0, 2).join('/') : spec.split('/')[0];
            if (!allowed.has(pkg)) offenders.push(`${relative(app, p)} imports ${spec}`);
            else if (!existsSync(join(app, 'node_modules', pkg))) offenders.push(`${relative(app, p)}: ${pkg} missing`);
          }
        }
      }
    };
    // dist/ui is the browser's bundle (every import resolved by Vite), never loaded by Node.
    walk(join(app, 'dist', 'src'));
    walk(join(app, 'dist', 'migrations'));
    expect(offenders).toEqual([]);
  });

  it('--version prints the package version (package.json is in the image)', async () => {
    const result = await conveyor(['--version']);
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout.trim()).toBe(PKG.version);
  });

  it('migrate applies the compiled migrations to a new database and prints them', async () => {
    const db = join(work, 'migrate', 'conveyor.db');
    const first = await conveyor(['migrate'], { CONVEYOR_DB_URL: `sqlite:${db}` });
    expect(first.code, first.stderr).toBe(0);
    const applied = JSON.parse(first.stdout) as { applied: string[] };
    expect(applied.applied.length).toBeGreaterThan(0);
    const second = await conveyor(['migrate'], { CONVEYOR_DB_URL: `sqlite:${db}` });
    expect(second.code, second.stderr).toBe(0);
    expect(JSON.parse(second.stdout)).toEqual({ applied: [] });
  });

  it('reap expiry runs once and exits 0', async () => {
    const db = `sqlite:${join(work, 'reap', 'conveyor.db')}`;
    expect((await conveyor(['migrate'], { CONVEYOR_DB_URL: db })).code).toBe(0);
    const result = await conveyor(['reap', 'expiry'], { CONVEYOR_DB_URL: db, CONVEYOR_LOG_LEVEL: 'silent' });
    expect(result.code, result.stderr).toBe(0);
    expect(JSON.parse(result.stdout)).toEqual({ reaper: 'expiry', expired: 0 });
  });

  it('controller --help prints its usage and exits 0', async () => {
    const result = await conveyor(['controller', '--help']);
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toMatch(/controller/);
  });

  it('serve (auth on: argon2, jose) answers /readyz, a login and an enqueue/dequeue/ack round trip, and exits 0 on SIGTERM', async () => {
    const env = {
      ...baseEnv,
      CONVEYOR_DB_URL: `sqlite:${join(work, 'serve', 'conveyor.db')}`,
      CONVEYOR_SERVER_HTTP_PORT: '0',
      CONVEYOR_SERVER_GRPC_PORT: '0',
      CONVEYOR_SERVER_HOST: '127.0.0.1',
      CONVEYOR_AUTH_ENABLED: 'true',
      CONVEYOR_AUTH_JWT_SECRET: 'image-test-secret-of-at-least-32-bytes!!',
      CONVEYOR_AUTH_USERNAME: 'admin',
      CONVEYOR_AUTH_PASSWORD: 'image-test-password',
    };
    const child: ChildProcess = spawn(process.execPath, [...entry, 'serve'], { cwd: app, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout!.on('data', (chunk) => (output += chunk));
    child.stderr!.on('data', (chunk) => (output += chunk));
    const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
    try {
      const port = await new Promise<number>((resolvePort, reject) => {
        const timer = setTimeout(() => reject(new Error(`serve did not log its port:\n${output}`)), 30_000);
        const check = () => {
          const line = output.split('\n').find((l) => l.includes('"httpPort"'));
          if (line) {
            clearTimeout(timer);
            resolvePort(JSON.parse(line).httpPort);
          }
        };
        child.stdout!.on('data', check);
        void exited.then((code) => reject(new Error(`serve exited with ${code}:\n${output}`)));
      });
      const base = `http://127.0.0.1:${port}`;
      const call = async (method: string, path: string, body?: unknown, token?: string) => {
        const res = await fetch(`${base}${path}`, {
          method,
          headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
          body: body === undefined ? undefined : JSON.stringify(body),
        });
        const text = await res.text();
        return { status: res.status, body: text ? JSON.parse(text) : undefined };
      };
      expect((await call('GET', '/readyz')).status).toBe(200);
      expect((await call('GET', '/healthz')).status).toBe(200);
      expect((await call('GET', '/api/version')).body).toEqual({ version: PKG.version });
      // The admin UI is in the image and served at /, with its scripts.
      const page = await fetch(`${base}/`);
      expect(page.status).toBe(200);
      expect(page.headers.get('content-type')).toMatch(/^text\/html/);
      expect(page.headers.get('content-security-policy')).toContain("script-src 'self'");
      const script = /<script\b[^>]*\bsrc="\.\/([^"]+)"/.exec(await page.text());
      expect(script).not.toBeNull();
      expect((await fetch(`${base}/${script![1]}`)).status).toBe(200);
      expect((await call('POST', '/api/messages', { topic: 'image', payload: 'x' })).status).toBe(401);
      const login = await call('POST', '/api/auth/login', { username: 'admin', password: 'image-test-password' });
      expect(login.status).toBe(200);
      const token = login.body.token as string;
      const enq = await call('POST', '/api/messages', { topic: 'image', payload: 'hello from the image' }, token);
      expect(enq.status).toBe(201);
      const deq = await call('POST', '/api/messages/dequeue', { topic: 'image', count: 1 }, token);
      expect(deq.status).toBe(200);
      expect(deq.body.messages.map((m: { id: string; payload: string }) => [m.id, m.payload])).toEqual([[enq.body.id, 'hello from the image']]);
      expect((await call('POST', `/api/messages/${enq.body.id}/ack`, undefined, token)).status).toBe(204);
      expect((await call('POST', '/api/messages/dequeue', { topic: 'image', count: 1 }, token)).body.messages).toEqual([]);
    } finally {
      if (child.exitCode === null) child.kill('SIGTERM');
    }
    expect(await exited, output).toBe(0);
    expect(output).toMatch(/"signal":"SIGTERM"/);
  });
});

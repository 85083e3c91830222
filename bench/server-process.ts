import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** dist/bench/server-process.js -> dist/src/cli.js: the compiled service next to the compiled bench. */
const CLI = fileURLToPath(new URL('../src/cli.js', import.meta.url));

export interface ServiceProcess {
  port: number;
  pid: number;
  output(): string;
  stop(): Promise<void>;
}

const running = new Set<ChildProcess>();

/** Children must not outlive the bench, also when it is interrupted or fails. */
function killAll(): void {
  for (const child of running) child.kill('SIGKILL');
}
process.once('exit', killAll);

/**
 * The V8 flags `npm start` runs the service with (package.json): a young generation of up to 64 MB per
 * semi-space, so the scavenges that pause every in-flight call run half as often (docs/benchmark.md).
 */
export const SERVICE_NODE_ARGS = ['--max-semi-space-size=64'];

/**
 * Starts `conveyor serve` as its own OS process on an ephemeral loopback port, in an empty working directory
 * (so no stray conveyor.yaml is picked up), and waits for the "httpPort" log line.
 */
export async function startService(dbUrl: string, extraArgs: string[] = [], env: Record<string, string> = {}, script = CLI): Promise<ServiceProcess> {
  const cwd = mkdtempSync(join(tmpdir(), 'conveyor-bench-cwd-'));
  const child = spawn(process.execPath, [...SERVICE_NODE_ARGS, ...extraArgs, script, 'serve'], {
    cwd,
    env: {
      ...process.env,
      CONVEYOR_CONFIG: '',
      CONVEYOR_SERVER_HTTP_PORT: '0',
      CONVEYOR_SERVER_GRPC_PORT: '0',
      CONVEYOR_SERVER_HOST: '127.0.0.1',
      CONVEYOR_METRICS_PORT: '0',
      CONVEYOR_LOG_LEVEL: 'info',
      CONVEYOR_DB_URL: dbUrl,
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  running.add(child);
  let output = '';
  const append = (chunk: Buffer) => {
    output += chunk.toString();
    if (output.length > 200_000) output = output.slice(-100_000);
  };
  child.stdout!.on('data', append);
  child.stderr!.on('data', append);
  const exited = new Promise<void>((resolve) => child.once('exit', () => (running.delete(child), resolve())));
  const port = await new Promise<number>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`server did not start within 30 s:\n${output}`)), 30_000);
    const onData = () => {
      const match = /"httpPort":(\d+)/.exec(output);
      if (!match) return;
      clearTimeout(timer);
      child.stdout!.off('data', onData);
      resolve(Number(match[1]));
    };
    child.stdout!.on('data', onData);
    void exited.then(() => {
      clearTimeout(timer);
      reject(new Error(`server exited with ${child.exitCode}:\n${output}`));
    });
  });
  return {
    port,
    pid: child.pid!,
    output: () => output,
    stop: async () => {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill('SIGTERM');
        const killer = setTimeout(() => child.kill('SIGKILL'), 30_000);
        await exited;
        clearTimeout(killer);
      }
      // Only when empty: a --cpu-prof without --cpu-prof-dir leaves its profile here.
      try {
        rmdirSync(cwd);
      } catch {
        process.stderr.write(`bench: service files left in ${cwd}\n`);
      }
    },
  };
}

import { readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';

/**
 * The kernel's ephemeral range: every outgoing connection and every `listen(0)` of the other test files
 * takes its local port from it, so a port found free there can be taken again in the seconds before
 * the server meant for it binds it ("Address already in use"). These ports come from below it.
 */
function ephemeralLow(): number {
  try {
    const low = Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]);
    if (Number.isInteger(low) && low > 12_000) return low;
  } catch {
    // not Linux: fall back to the IANA dynamic range's start
  }
  return 32_768;
}

/** Distinct free loopback ports outside the ephemeral range: all held open at once, then released together. */
export async function freePorts(count: number): Promise<number[]> {
  const low = 10_000;
  const high = ephemeralLow();
  const servers: Server[] = [];
  try {
    const ports: number[] = [];
    for (let tries = 0; ports.length < count; tries++) {
      if (tries > count * 50) throw new Error(`no ${count} free ports between ${low} and ${high}`);
      const port = low + Math.floor(Math.random() * (high - low));
      if (ports.includes(port)) continue;
      const server = createServer();
      const bound = await new Promise<boolean>((resolve) => {
        server.once('error', () => resolve(false));
        server.listen(port, '127.0.0.1', () => resolve(true));
      });
      if (!bound) continue;
      servers.push(server);
      ports.push(port);
    }
    return ports;
  } finally {
    await Promise.all(servers.map((s) => new Promise((resolve) => s.close(resolve))));
  }
}

/** One free loopback port outside the ephemeral range, for a server started after this returns. */
export async function freePort(): Promise<number> {
  return (await freePorts(1))[0];
}

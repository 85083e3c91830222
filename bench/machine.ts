import { readFileSync } from 'node:fs';
import { cpus, totalmem, release, platform } from 'node:os';

export interface MachineInfo {
  cpuModel: string;
  cores: number;
  memoryGiB: number;
  os: string;
  node: string;
  loadAverage?: string;
}

function cpuModel(): string {
  try {
    const match = /^model name\s*:\s*(.+)$/m.exec(readFileSync('/proc/cpuinfo', 'utf8'));
    if (match) return match[1].trim();
  } catch {
    // not Linux
  }
  return cpus()[0]?.model ?? 'unknown';
}

/** The 1-minute load average before a run: a busy machine makes every figure provisional. */
export function loadAverage(): string | undefined {
  try {
    return readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');
  } catch {
    return undefined;
  }
}

export function machineInfo(): MachineInfo {
  return {
    cpuModel: cpuModel(),
    cores: cpus().length,
    memoryGiB: Math.round((totalmem() / 2 ** 30) * 10) / 10,
    os: `${platform()} ${release()}`,
    node: process.version,
    loadAverage: loadAverage(),
  };
}

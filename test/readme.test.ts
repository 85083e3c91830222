import { readFileSync, statSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { runCli, tempDirs } from './helpers/cli.js';

/**
 * The README is the front door: small enough to read (reference material lives in docs/), and its list of
 * CLI commands is the one `conveyor help` prints. Its shell examples are run by docs-examples.test.ts.
 */

const README = 'README.md';
const text = () => readFileSync(README, 'utf8');

/** The first word of each command `conveyor help` lists under "Commands:". */
function helpCommands(help: string): string[] {
  const block = help.split(/^Commands:\n/m)[1].split(/\n\n/)[0];
  return block
    .split('\n')
    .map((line) => /^ {2}(\S+)/.exec(line)?.[1])
    .filter((c): c is string => c !== undefined)
    .sort();
}

/** The first word of each `code` item of the README's "Commands: …;" sentence. */
function readmeCommands(readme: string): string[] {
  const sentence = /Commands: ([\s\S]*?);/.exec(readme)?.[1];
  expect(sentence, 'the README lists the CLI commands in a sentence "Commands: …;"').toBeDefined();
  return [...sentence!.matchAll(/`([^`]+)`/g)].map((m) => m[1].split(' ')[0]).sort();
}

describe('README.md', () => {
  const tempDir = tempDirs('conveyor-readme-');

  it('is under 16 KB', () => {
    expect(statSync(README).size).toBeLessThan(16 * 1024);
  });

  it('lists every command `conveyor help` lists, and no other', async () => {
    const help = await runCli(['help'], {}, tempDir());
    expect(help.code, help.stderr).toBe(0);
    const commands = helpCommands(help.stdout);
    expect(commands).toContain('backup');
    expect(commands.length).toBeGreaterThan(6);
    expect(readmeCommands(text())).toEqual(commands);
  });

  it('shows the status of every tour command whose answer it documents with one', () => {
    // A `# → <status>` line after a curl that prints no status would show the reader nothing of it.
    const blocks = [...text().matchAll(/^```sh\n([\s\S]*?)^```/gm)].map((m) => m[1]);
    expect(blocks.length).toBeGreaterThan(3);
    for (const block of blocks) {
      const lines = block.split('\n');
      lines.forEach((line, i) => {
        if (!/^# → \d{3}/.test(line)) return;
        const command = lines.slice(0, i).reverse().find((l) => l.trim() !== '' && !l.startsWith('# →') && !l.startsWith('  -d'));
        expect(command, `README: "${line}"`).toContain(`-w ' %{http_code}\\n'`);
      });
    }
  });
});

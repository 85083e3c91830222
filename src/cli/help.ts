import { keysMatching, type ConfigKey } from './config-keys.js';

/** An option of a command, as its --help lists it. */
export interface OptionHelp {
  flag: string;
  description: string;
  env?: string;
  default?: string;
}

/** What `conveyor <command> --help` says; the configuration keys come from the schema, so help never drifts. */
export interface CommandHelp {
  /** `serve`, `config check`. */
  name: string;
  synopsis: string;
  /** One line, for `conveyor help`. */
  summary: string;
  description: string;
  options: OptionHelp[];
  /** Keys read, as `section.name` or `section.*`. */
  config: string[];
  /** Other environment variables it reads, [name, meaning]. */
  environment?: Array<[string, string]>;
  exitCodes: string;
}

export const CONFIG_OPTION: OptionHelp = {
  flag: '--config FILE',
  description: 'configuration file (YAML)',
  env: 'CONVEYOR_CONFIG',
  default: './conveyor.yaml when it exists',
};
export const HELP_OPTION: OptionHelp = { flag: '-h, --help', description: 'show this help and exit' };

function table(rows: string[][], indent = '  '): string {
  const widths = rows[0].map((_, i) => Math.max(...rows.map((r) => (i < r.length - 1 ? r[i].length : 0))));
  return rows.map((r) => indent + r.map((cell, i) => (i < r.length - 1 ? cell.padEnd(widths[i]) : cell)).join('  ').trimEnd()).join('\n');
}

function optionRows(options: OptionHelp[]): string[][] {
  return options.map((o) => {
    const extra = [o.env && `env ${o.env}`, o.default && `default: ${o.default}`].filter(Boolean).join('; ');
    return [o.flag, extra ? `${o.description} (${extra})` : o.description];
  });
}

export function configTable(keys: ConfigKey[]): string {
  return table([['key', 'environment variable', 'default', 'meaning'], ...keys.map((k) => [k.key, k.env, k.defaultText, k.description])]);
}

export function renderCommandHelp(help: CommandHelp): string {
  const parts = [`usage: ${help.synopsis}`, help.description, `Options:\n${table(optionRows(help.options))}`];
  if (help.environment?.length) parts.push(`Environment:\n${table(help.environment)}`);
  const keys = keysMatching(help.config);
  if (keys.length > 0) {
    parts.push(
      `Configuration it reads (conveyor.yaml key; the environment variable overrides the file):\n${configTable(keys)}\n` +
        '  Durations take 500ms, 30s, 5m, 24h, 1d or a number of seconds.',
    );
  }
  parts.push(`Exit status: ${help.exitCodes}`);
  return `${parts.join('\n\n')}\n`;
}

export function renderUsage(commands: CommandHelp[]): string {
  const rows = [
    ...commands.map((c) => [c.synopsis.replace(/^conveyor /, '').replace(/ \[.*$/, ''), c.summary]),
    ['help [COMMAND]', 'show the help of a command'],
    ['version', 'print the version (also --version)'],
  ];
  return `usage: conveyor <command> [options]

Commands:
${table(rows)}

Run \`conveyor <command> --help\` (or \`conveyor help <command>\`) for its options and the configuration keys it reads.
With no command, conveyor runs serve. From a clone of the repository: \`node dist/src/cli.js\` after
\`npm run build\` (or \`npm link\` once to put \`conveyor\` on the PATH); in the container image it is the entrypoint.

Configuration: conveyor.yaml in the working directory (or --config FILE, or CONVEYOR_CONFIG), overridden by
CONVEYOR_<SECTION>_<KEY> environment variables. \`conveyor config check\` shows the result.
`;
}

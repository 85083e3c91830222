#!/usr/bin/env node
// The `conveyor` command (package.json "bin": dist/src/cli.js). Each subcommand lives in src/cli/.
import { main, reportFailure } from './cli/main.js';

main(process.argv.slice(2)).catch((err: unknown) => {
  process.exit(reportFailure(err));
});

#!/usr/bin/env node
import { readFileSync } from 'node:fs';
import { banner } from 'hello-banner';
import { greet } from 'hello-greeting';
import format from 'hello-format';

// The payload's shim runs `node <entry> "$@"`; this package's version is kept
// equal to the distribution's, so --version prints the distribution version.
const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8'));

function usage() {
  return [
    banner('hello ' + pkg.version),
    '',
    greet('you'),
    '',
    'Usage: hello [options] [name]',
    '',
    format.indent(
      format.columns([
        ['name', 'who to greet (default: world)'],
        ['--version', 'print the version and exit'],
        ['--help', 'print this help and exit'],
      ]),
      2,
    ),
  ].join('\n');
}

const args = process.argv.slice(2);
if (args.includes('--version') || args.includes('-v')) {
  console.log(pkg.version);
} else if (args.includes('--help') || args.includes('-h')) {
  console.log(usage());
} else if (args.some((a) => a.startsWith('-'))) {
  console.error('hello: unknown option ' + args.find((a) => a.startsWith('-')) + '; see hello --help');
  process.exitCode = 2;
} else {
  console.log(greet(args[0] || 'world'));
}

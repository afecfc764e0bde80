import { readFileSync } from 'node:fs';

// The template is located by path relative to this module, so it must ship
// as a file beside it (a bundler has to keep it, or the greeting breaks).
const template = readFileSync(new URL('./greeting.txt', import.meta.url), 'utf8');

export function greet(name) {
  return template.replaceAll('{{name}}', name).trimEnd();
}

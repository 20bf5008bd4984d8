import { existsSync, readFileSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { type CpuProfile, formatSelfTimes, summarizeProfileDir, type Window } from './profile.ts';

/**
 * `npm run profile:summary --workspace @quest/bench -- <file.cpuprofile | dir> [top] [--all]`
 * Restricted to the measured service windows when the bench left a windows.json beside (or one
 * level above) the profiles; --all summarises the whole process life (start-up included).
 */
const args = process.argv.slice(2);
const all = args.includes('--all');
const [target, topArg] = args.filter((a) => a !== '--all');
if (!target) {
  console.error('usage: profile-cli <file.cpuprofile | directory> [top]');
  process.exit(2);
}
const top = topArg ? Number(topArg) : 25;
const isDir = statSync(target).isDirectory();
const base = isDir ? target : dirname(target);
const windowsFile = [join(base, 'windows.json'), join(base, '..', 'windows.json')].find((f) => existsSync(f));
const windows =
  all || !windowsFile
    ? undefined
    : (JSON.parse(readFileSync(windowsFile, 'utf8')) as Window[]).filter((w) => w.label.includes('(service)'));
if (isDir) {
  console.log(summarizeProfileDir(target, top, windows) ?? `no .cpuprofile files in ${target}`);
} else {
  console.log(formatSelfTimes(JSON.parse(readFileSync(target, 'utf8')) as CpuProfile, top, windows));
}

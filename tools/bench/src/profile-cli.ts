import { readFileSync, statSync } from 'node:fs';
import { type CpuProfile, formatSelfTimes, summarizeProfileDir } from './profile.ts';

/** `npm run profile:summary --workspace @quest/bench -- <file.cpuprofile | dir> [top]` */
const [target, topArg] = process.argv.slice(2);
if (!target) {
  console.error('usage: profile-cli <file.cpuprofile | directory> [top]');
  process.exit(2);
}
const top = topArg ? Number(topArg) : 25;
if (statSync(target).isDirectory()) {
  console.log(summarizeProfileDir(target, top) ?? `no .cpuprofile files in ${target}`);
} else {
  console.log(formatSelfTimes(JSON.parse(readFileSync(target, 'utf8')) as CpuProfile, top));
}

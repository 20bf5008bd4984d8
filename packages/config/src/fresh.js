// Whether a bundle (scripts/build.mjs) may stand in for the sources it was built from: plain
// JavaScript, so a launcher can ask before any TypeScript loader is registered.
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';

/** What a bundle is built from: TypeScript, and the Lua scripts it inlines. */
const SOURCE = /\.(ts|lua)$/;

/** Newest modification time (ms) of the source files under `dirs` (missing directories are skipped). */
export function newestSource(dirs) {
  let newest = 0;
  for (const dir of dirs) {
    let names;
    try {
      names = readdirSync(dir, { recursive: true });
    } catch {
      continue;
    }
    for (const name of names) if (SOURCE.test(name)) newest = Math.max(newest, statSync(join(dir, name)).mtimeMs);
  }
  return newest;
}

/** True when `bundle` exists and no source file under `dirs` is newer than it. */
export function bundleIsFresh(bundle, dirs) {
  let built;
  try {
    built = statSync(bundle).mtimeMs;
  } catch {
    return false;
  }
  return built >= newestSource(dirs);
}

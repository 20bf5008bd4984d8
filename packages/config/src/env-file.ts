import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { parseEnv as parseDotEnv } from 'node:util';
import { ConfigError } from './errors.ts';

/**
 * `.env` support for every process (api, worker, migrate, quest-admin).
 *
 * Which file: `ENV_FILE` when set (a path, relative to the working directory; it must exist), else
 * the first `.env` found from the working directory upwards, stopping at the project root (the
 * directory holding `package-lock.json`), so `npm start` from the repository root and the
 * workspace scripts npm runs inside `apps/*` read the same file. `ENV_FILE=/dev/null` reads none.
 *
 * Precedence: a variable set in the real environment (even to an empty string) wins over the
 * file; the file only fills in what is unset; zod defaults apply last. The file is parsed with
 * Node's own dotenv parser (`util.parseEnv`, Node ≥ 20.12) and never written into `process.env`.
 */

export interface LoadedEnvironment {
  /** The environment to parse: the file's variables overlaid by the real ones. */
  env: Record<string, string | undefined>;
  /** Absolute path of the file read, or null when none was. */
  file: string | null;
  /** Names of the variables the file supplied (set in the file and not in the real environment). */
  fromFile: string[];
}

/** The `.env` that applies to `cwd`, or null. */
export function findEnvFile(cwd: string): string | null {
  let dir = resolve(cwd);
  for (;;) {
    const candidate = join(dir, '.env');
    if (existsSync(candidate)) return candidate;
    if (existsSync(join(dir, 'package-lock.json'))) return null;
    const parent = dirname(dir);
    if (parent === dir) return null;
    dir = parent;
  }
}

export function loadEnvironment(source: Record<string, string | undefined>, cwd: string = process.cwd()): LoadedEnvironment {
  const explicit = source.ENV_FILE;
  const file = explicit ? resolve(cwd, explicit) : findEnvFile(cwd);
  if (!file) return { env: { ...source }, file: null, fromFile: [] };
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    throw new ConfigError(
      `Invalid configuration:\n  ENV_FILE: cannot read ${file}: ${(error as NodeJS.ErrnoException).code ?? String(error)}`,
    );
  }
  const vars = parseDotEnv(text);
  const env: Record<string, string | undefined> = { ...source };
  const fromFile: string[] = [];
  for (const [name, value] of Object.entries(vars)) {
    if (value === undefined || source[name] !== undefined) continue;
    env[name] = value;
    fromFile.push(name);
  }
  return { env, file, fromFile };
}

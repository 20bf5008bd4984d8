import { fileURLToPath } from 'node:url';

/** The browser script's entry (browser/, typechecked with the DOM types by browser/tsconfig.json). */
export const CONSOLE_SCRIPT_ENTRY = fileURLToPath(new URL('./browser/console.ts', import.meta.url));

/**
 * The console's browser script, bundled by esbuild into one file for the browsers the console
 * supports. scripts/build.mjs runs this while it bundles the API and puts the text in the bundle
 * (CONSOLE_SCRIPT in assets.ts); the API run from its TypeScript runs it once, at its first request
 * for the script. Either way the page gets the same bundle.
 */
export async function bundleConsoleScript(): Promise<string> {
  const { build } = await import('esbuild');
  const result = await build({
    entryPoints: [CONSOLE_SCRIPT_ENTRY],
    bundle: true,
    format: 'iife',
    platform: 'browser',
    target: 'es2020',
    write: false,
    logLevel: 'warning',
  });
  return result.outputFiles[0]!.text;
}

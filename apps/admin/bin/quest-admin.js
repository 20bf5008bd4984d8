#!/usr/bin/env node
// Thin launcher: register tsx's ESM loader in this process, then run the TypeScript entry point.
import { register } from 'tsx/esm/api';

register();
await import('../src/cli.ts');

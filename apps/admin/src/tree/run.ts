import type { CommandOutput } from '../context.ts';

/** How an action runs its command: the result goes to the program's one output. */
export type Run = (fn: () => Promise<CommandOutput>) => Promise<void>;

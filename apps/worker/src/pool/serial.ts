/**
 * Runs an async task one at a time. `run()` while it runs does nothing; `again()` while it runs
 * runs it once more right after (on the next turn of the event loop). The task's own errors are
 * its business: it must not reject.
 */
export class Serial {
  private running = false;
  private rerun = false;

  constructor(private readonly task: () => Promise<void>) {}

  async run(): Promise<void> {
    if (this.running) return;
    this.running = true;
    try {
      await this.task();
    } finally {
      this.running = false;
      if (this.rerun) {
        this.rerun = false;
        setImmediate(() => void this.run());
      }
    }
  }

  /** Run now, or once more right after the run under way. */
  again(): void {
    if (this.running) this.rerun = true;
    else void this.run();
  }
}

import { once } from 'node:events';
import { createWriteStream } from 'node:fs';
import { rename, unlink } from 'node:fs/promises';
import { finished } from 'node:stream/promises';
import { FAILED_ROW_COLUMNS, type FailedRow, failedRowCells } from '@quest/csv';
import { stringify } from 'csv-stringify';

/**
 * `<input>.failed.csv`, written through a temporary file and renamed at the end of the run. Its
 * columns are the credit's (FAILED_ROW_COLUMNS of @quest/csv: line, address, points, code, reason)
 * unless others are given (`writeCells`).
 */
export class FailedRowsFile {
  private stringifier: ReturnType<typeof stringify> | undefined;
  private done: Promise<void> | undefined;
  readonly tmpPath: string;

  constructor(
    readonly path: string,
    private readonly columns: readonly string[] = FAILED_ROW_COLUMNS,
  ) {
    this.tmpPath = `${path}.tmp`;
  }

  async write(rows: readonly FailedRow[]): Promise<void> {
    await this.writeCells(rows.map(failedRowCells));
  }

  /** Rows as cells, in the order of the file's columns. */
  async writeCells(rows: readonly (readonly (string | number)[])[]): Promise<void> {
    if (rows.length === 0) return;
    if (!this.stringifier) {
      this.stringifier = stringify({ header: true, columns: [...this.columns] });
      const out = createWriteStream(this.tmpPath);
      this.stringifier.pipe(out);
      this.done = finished(out);
      this.done.catch(() => {}); // observed in close()
    }
    for (const row of rows) {
      if (!this.stringifier.write(row)) {
        // A failed write stream never drains: its error ends the wait instead.
        await Promise.race([once(this.stringifier, 'drain'), this.done]);
      }
    }
  }

  /** Publish the file if anything failed (else remove a stale one from an earlier run); its path or null. */
  async close(): Promise<string | null> {
    if (!this.stringifier) {
      await unlink(this.path).catch((error: NodeJS.ErrnoException) => {
        if (error.code !== 'ENOENT') throw error;
      });
      return null;
    }
    this.stringifier.end();
    await this.done;
    await rename(this.tmpPath, this.path);
    return this.path;
  }
}

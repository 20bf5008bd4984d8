export { ACCOUNT_COLUMNS, type AccountCsvRow, readAccountCsv } from './accounts.ts';
export {
  CREDIT_COLUMNS,
  CREDIT_REASONS,
  type CreditCheck,
  type CreditCsvRow,
  checkCreditCells,
  FAILED_ROW_COLUMNS,
  type FailedRow,
  failedRowCells,
  failedRowsCsv,
  INVALID_ROW,
  readCreditCsv,
} from './credit.ts';
export {
  CsvError,
  type CsvColumns,
  type CsvErrorCode,
  type CsvRow,
  FIRST_ROW_LINE,
  MAX_ROW_CHARS,
  ROW_REASONS,
  readCsv,
} from './read.ts';

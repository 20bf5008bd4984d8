// Transitional: the system harness moved to @quest/testing (system.ts, fixtures.ts).
import { auditViolations as audit, type System, testAddress } from '@quest/testing';

export { completedJobs, get, post, seed, startSystem, type System } from '@quest/testing';
export const address = testAddress;
export const auditViolations = (system: System) => audit(system.db.sql);

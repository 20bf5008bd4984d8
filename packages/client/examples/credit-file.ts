// Credit every line of a file "address,points" (a header line first) to a quest, in batches, and
// pick up where it stopped if the process dies: the state is stored next to the file. Usage:
//   npx tsx credit-file.ts http://127.0.0.1:3000 sk_… <questId> credits.csv
import { createReadStream } from 'node:fs';
import { readFile, rename, writeFile } from 'node:fs/promises';
import { createInterface } from 'node:readline';
import { type CreditState, createQuestClient } from '@quest/client';

const [baseUrl = 'http://127.0.0.1:3000', apiKey, questId, file = 'credits.csv'] = process.argv.slice(2);
const stateFile = `${file}.state.json`;
const quest = createQuestClient({ baseUrl, apiKey });

async function* rows() {
  let line = 0;
  for await (const text of createInterface({ input: createReadStream(file), crlfDelay: Number.POSITIVE_INFINITY })) {
    if (++line === 1 || text.trim() === '') continue;
    const [address = '', points = ''] = text.split(',').map((cell) => cell.trim());
    yield { line, address, points };
  }
}

// Written whole (aside, then renamed): a crash never leaves half a state.
async function save(state: CreditState) {
  await writeFile(`${stateFile}.tmp`, JSON.stringify(state));
  await rename(`${stateFile}.tmp`, stateFile);
}
const saved = await readFile(stateFile, 'utf8').then(
  (text) => JSON.parse(text) as CreditState,
  () => undefined,
);

let credited = 0;
let before = 0;
let failed = 0;
for await (const batch of quest.creditMany(Number(questId), rows(), { state: saved, onState: save })) {
  for (const r of batch.results) {
    if (r.status === 'credited') {
      if (r.replayed) before++;
      else credited++;
    } else {
      failed++;
      console.log(`line ${r.row.line}: not credited, ${r.status === 'invalid' ? r.reason : r.code}`);
    }
  }
}
console.log(
  `done from line ${saved ? saved.rowsDone + 2 : 2}: ${credited} credited now, ${before} before, ${failed} not credited`,
);

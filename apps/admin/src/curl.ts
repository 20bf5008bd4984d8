/** Ready-to-paste curl commands for the demo: one per endpoint of the public interface. */

/** Quote for POSIX shells: single quotes, with embedded single quotes closed and escaped. */
export function shellQuote(value: string): string {
  if (/^[A-Za-z0-9_@%+=:,./-]+$/.test(value)) return value;
  return `'${value.replaceAll("'", `'\\''`)}'`;
}

export interface DemoCurlInput {
  baseUrl: string;
  apiKey: string;
  questId: number;
  campaignId: number;
  address: string;
  points: number;
}

export interface DemoCurls {
  listQuests: string;
  getQuest: string;
  getCampaign: string;
  allocate: string;
}

export function demoCurls(input: DemoCurlInput): DemoCurls {
  const base = input.baseUrl.replace(/\/+$/, '');
  const url = (path: string) => shellQuote(`${base}${path}`);
  const key = `-H ${shellQuote(`x-api-key: ${input.apiKey}`)}`;
  const body = JSON.stringify({ points: input.points, address: input.address });
  return {
    listQuests: `curl -sS ${url('/quests')}`,
    getQuest: `curl -sS ${url(`/quests/${input.questId}`)} ${key}`,
    getCampaign: `curl -sS ${url(`/campaigns/${input.campaignId}`)}`,
    allocate: `curl -sS -X POST ${url(`/quests/${input.questId}`)} ${key} -H 'content-type: application/json' -d ${shellQuote(body)}`,
  };
}

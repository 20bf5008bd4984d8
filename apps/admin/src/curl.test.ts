import { execFileSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { demoCurls, shellQuote } from './curl.ts';

/** What a POSIX shell turns a quoted word back into. */
const shellWords = (line: string): string[] =>
  JSON.parse(
    execFileSync('sh', ['-c', `node -e 'console.log(JSON.stringify(process.argv.slice(1)))' -- ${line}`], { encoding: 'utf8' }),
  );

describe('shellQuote', () => {
  it('leaves plain words alone and quotes everything else so the shell gives it back unchanged', () => {
    expect(shellQuote('http://127.0.0.1:3000/quests')).toBe('http://127.0.0.1:3000/quests');
    for (const value of ['x-api-key: sk_abc', `it's`, '{"points":10}', '$HOME `id` \\ "q"', '']) {
      expect(shellWords(shellQuote(value))).toEqual([value]);
    }
  });
});

describe('demoCurls', () => {
  const curls = demoCurls({
    baseUrl: 'http://localhost:3000/',
    apiKey: 'sk_test-key_123',
    questId: 7,
    campaignId: 3,
    address: '0x52908400098527886E0F7030069857D2E4169EE7',
    points: 10,
  });

  it('targets the four endpoints under the base URL', () => {
    expect(curls.listQuests).toBe('curl -sS http://localhost:3000/quests');
    expect(curls.getCampaign).toBe('curl -sS http://localhost:3000/campaigns/3');
    expect(shellWords(curls.getQuest)).toEqual([
      'curl',
      '-sS',
      'http://localhost:3000/quests/7',
      '-H',
      'x-api-key: sk_test-key_123',
    ]);
  });

  it('posts the points and address as JSON with the owner key', () => {
    const words = shellWords(curls.allocate);
    expect(words.slice(0, 5)).toEqual(['curl', '-sS', '-X', 'POST', 'http://localhost:3000/quests/7']);
    expect(words).toContain('x-api-key: sk_test-key_123');
    expect(words).toContain('content-type: application/json');
    expect(JSON.parse(words[words.indexOf('-d') + 1]!)).toEqual({
      points: 10,
      address: '0x52908400098527886E0F7030069857D2E4169EE7',
    });
  });
});

import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { accessText, checkSqsActions } from '../src/sqs/action.js';
import { SQS_ACTIONS } from '../src/sqs/actions.js';

/**
 * docs/sqs.md's table of actions is the declarations of src/sqs/actions.ts: every declared action is listed
 * with its access rule and audit action, and nothing else is.
 */
describe('docs/sqs.md', () => {
  it('lists exactly the declared SQS actions, with their access and audit', () => {
    const text = readFileSync(new URL('../docs/sqs.md', import.meta.url), 'utf8');
    const section = text.slice(text.indexOf('## Actions'), text.indexOf('### Queues are topics'));
    const rows = section
      .split('\n')
      .filter((line) => /^\| `[A-Za-z]+` \|/.test(line))
      .map((line) => line.split('|').slice(1, 4).map((cell) => cell.trim()));
    const declared = SQS_ACTIONS.map((a) => [`\`${a.name}\``, accessText(a.access), 'action' in a.audit ? `\`${a.audit.action}\`` : 'no']);
    expect(rows).toEqual(declared);
  });

  it('the declarations are checked: a name declared twice, or left out of the audit without a reason, fails', () => {
    expect(() => checkSqsActions([SQS_ACTIONS[0], SQS_ACTIONS[0]])).toThrow(/declared twice/);
    expect(() => checkSqsActions([{ ...SQS_ACTIONS[0], audit: { notAudited: '' } }])).toThrow(/notAudited must say why/);
    // Every action either names its audit action or says why it has none.
    for (const action of SQS_ACTIONS) expect('action' in action.audit || action.audit.notAudited.length > 0).toBe(true);
  });
});

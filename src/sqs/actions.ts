import { checkSqsActions, type SqsAction } from './action.js';
import { receiveActions } from './actions/receive.js';
import { sendActions } from './actions/send.js';
import { settleActions } from './actions/settle.js';
import { queueActions } from './actions/queues.js';

/** Every action of the SQS-compatible API (docs/sqs.md): the dispatch looks actions up here by name. */
export const SQS_ACTIONS: readonly SqsAction[] = [...sendActions, ...receiveActions, ...settleActions, ...queueActions];

checkSqsActions(SQS_ACTIONS);

export const SQS_ACTION_BY_NAME: ReadonlyMap<string, SqsAction> = new Map(SQS_ACTIONS.map((a) => [a.name, a]));

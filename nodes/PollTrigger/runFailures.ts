import {
	type IDataObject,
	type INode,
	type INodeExecutionData,
	type IRun,
	type NodeOperationError,
} from 'n8n-workflow';

import type { Settlement } from '../../core/outbox';
import {
	type DeadLetter,
	deadLetterMessage,
	type PollActivation,
	type PollRun,
	type RetryEntry,
	type RunEnd,
	type RunItem,
} from '../../core/poll';
import type { RetryPolicy } from '../../core/retryPolicy';
import { nodeError } from '../shared/errors';
import { runResult } from '../shared/whenRunFails';

/**
 * The Poll Trigger's side of "When a Run Fails" (core/poll/retries.ts; the policy's parameters in
 * nodes/shared/whenRunFails.ts): how n8n ended a run as the core reads it, the attempt on a run's
 * items, a dead letter's failed execution, and Execute step's Dead Letters.
 */

/** How n8n ended a run, for the core: its status and the message of the error that ended it. */
export function runEnd(settlement: Settlement, error?: Error, result?: IRun): RunEnd {
	const ended = runResult(result);
	return { settlement, ...(error && { error }), ...(ended && { result: ended }) };
}

/**
 * A run's items as n8n gets them. With Start the Item Again (or for an attempt), each carries
 * `_attempt`: its number (1: the first run), Max Attempts, and the item's key, so that the
 * workflow can tell a retry.
 */
export function runItems(run: PollRun, policy: RetryPolicy | undefined): INodeExecutionData[] {
	const items = run.items ?? [];
	if (!policy && run.attempt === undefined)
		return items.map((json) => ({ json: json as IDataObject }));
	return items.map((json, index) => ({
		json: {
			...(json as IDataObject),
			_attempt: {
				number: run.attempt ?? 1,
				...(policy && { of: policy.maxAttempts }),
				itemKey: run.keys[index] ?? null,
			},
		},
	}));
}

/** A dead letter's one failed execution: the item, its key, the attempts and the last error. */
export function deadLetterError(node: INode, letter: DeadLetter): NodeOperationError {
	return nodeError(node, deadLetterMessage(letter), {
		description: `${letter.note ? `${capitalized(letter.note)}. ` : ''}Execute step (Execute Step Shows: Dead Letters) lists the dead letters; put the item's key in Start Again and publish to start it once more.`,
	});
}

/** Execute step's Dead Letters: each dead letter, then each item waiting for an attempt. */
export function deadLetterRows(activation: PollActivation): INodeExecutionData[] {
	const dead = activation.deadLetters();
	const waiting = activation.waitingAttempts();
	if (dead.length === 0 && waiting.length === 0)
		return [
			{ json: { deadLetters: 0, note: 'No dead letter, and no item waiting for an attempt' } },
		];
	return [
		...dead.map((letter) => ({ json: deadLetterRow(letter) })),
		...waiting.map((entry) => ({ json: waitingRow(entry) })),
	];
}

function deadLetterRow(letter: DeadLetter): IDataObject {
	return {
		deadLetter: true,
		itemKeys: letter.keys,
		...(letter.itemCount !== undefined && { itemCount: letter.itemCount }),
		deduplicationKey: letter.key,
		attempts: letter.attempts,
		lastError: letter.lastError,
		at: new Date(letter.at).toISOString(),
		...(letter.note && { note: letter.note }),
	};
}

function waitingRow(entry: RetryEntry<RunItem>): IDataObject {
	return {
		deadLetter: false,
		itemKeys: entry.keys,
		deduplicationKey: entry.key,
		failedRuns: entry.failed,
		lastError: entry.lastError,
		...(entry.emitted === undefined
			? { nextAttemptAt: new Date(entry.dueAt).toISOString() }
			: { attemptRunning: entry.emitted }),
	};
}

function capitalized(text: string): string {
	return text.charAt(0).toUpperCase() + text.slice(1);
}

import { randomUUID } from 'node:crypto';

import jsonata from 'jsonata';

import { FORWARD_HEADER, type OpenedForward, openForward } from './proof';
import { type ExecutionReplayLog, type ReplayMemory, claimInExecution } from './replay';
import {
	type AuthVerdict,
	type CallbackAuth,
	type CallbackHeaders,
	type Refusal,
	type SignedRequest,
	WAIT_ID_PARAM,
	constantTimeEqual,
	credentialHeaderName,
	verifyCallback,
} from './signature';
import { type WaitState, pastDeadline } from './timeout';
import { type WaitRecord, verifyNotice } from './waitRecord';

/**
 * Correlation of a resume callback with the run waiting for it: the outbound call carried an id,
 * the callback must carry the same one back. A callback is judged in a fixed order —
 * authentication (401/403), the wait its URL names (403), the deadline (410), correlation (409),
 * then the replay memories, this process's and the execution's (403) — so an unauthenticated caller learns nothing about the waiting run.
 */

export const DEFAULT_CORRELATION_PATH = 'body.correlationId';
/** Keeps a refusal reason readable when a caller sends an enormous id. */
const MAX_ECHOED_ID_LENGTH = 128;

/** The parts of a callback a correlation expression can reach, e.g. `query.id` or headers.`x-correlation-id`. */
export interface CallbackParts {
	body: unknown;
	headers: CallbackHeaders;
	query: Record<string, unknown>;
}

export interface CorrelationPath {
	readonly expression: string;
	evaluate(parts: CallbackParts): Promise<unknown>;
}

/** 409 Conflict rather than 422: the request is well-formed, it just conflicts with the state of the waiting run. */
export type CorrelationVerdict = { ok: true; received: string } | Refusal<409>;

export interface WaitingRun {
	auth: CallbackAuth;
	correlationPath: CorrelationPath;
	expectedCorrelationId: string;
	wait: WaitState;
	/** Signed callbacks already accepted in this process; a copy is refused. */
	replay: ReplayMemory;
	/** Signed callbacks the execution's earlier waits accepted, kept in its own data (any process); a copy is refused. */
	executionReplay?: ExecutionReplayLog;
	/** The waiting execution's id: a callback forwarded by a Round-Trip Callback must be for it (proof.ts). */
	executionId?: string;
}

export interface InboundCallback extends SignedRequest, CallbackParts {
	/** The caller's address, where n8n has it. */
	address?: string;
}

/**
 * What the resumed run receives: the callback minus its credential header. Through the fixed URL,
 * the partner's request as the Round-Trip Callback received it (its headers, query and address), not
 * the forward's.
 */
export interface CallbackReceipt extends CallbackParts {
	correlationId: string;
	receivedAt: string;
	address?: string;
}

/** On acceptance, `replayKey` is what the replay memory now holds for it. */
export type CallbackJudgement =
	| { ok: true; receipt: CallbackReceipt; replayKey?: string }
	| Refusal<401 | 403 | 409 | 410>;

export function newCorrelationId(): string {
	return randomUUID();
}

/**
 * Ids are compared as strings: a JSON number 42 and the string "42" are the same id, because
 * external systems round-trip ids through JSON, query strings and headers inconsistently.
 * Returns undefined for anything that is not a single non-empty string or finite number.
 */
export function normalizeCorrelationId(value: unknown): string | undefined {
	if (typeof value === 'string') return value === '' ? undefined : value;
	if (typeof value === 'number' && Number.isFinite(value)) return String(value);
	return undefined;
}

/**
 * Compiles once at setup, so a typo fails the node before the run pauses rather than on every
 * callback: JSONata's error for a syntax error, which validateSettings reports naming the parameter.
 */
export function compileCorrelationPath(
	expression: string = DEFAULT_CORRELATION_PATH,
): CorrelationPath {
	const compiled = jsonata(expression);
	return { expression, evaluate: async (parts) => await compiled.evaluate(parts) };
}

/**
 * Whether the expression is a plain path into the headers or the query (`headers.\`x-id\``,
 * `$.query.id`): it can read nothing else. Other expressions may reach the body; only a callback shows.
 */
export function readsOnlyHeadersOrQuery(path: CorrelationPath): boolean {
	type Step = { type: string; value?: unknown; stages?: unknown; group?: unknown };
	const ast = jsonata(path.expression).ast() as { type: string; steps?: Step[] };
	if (ast.type !== 'path' || ast.steps === undefined) return false;
	// A leading `$` or `$$` is the callback itself.
	const steps =
		ast.steps[0]?.type === 'variable' && (ast.steps[0].value === '' || ast.steps[0].value === '$')
			? ast.steps.slice(1)
			: ast.steps;
	return (
		(steps[0]?.value === 'headers' || steps[0]?.value === 'query') &&
		steps.every((step) => step.type === 'name' && !step.stages && !step.group)
	);
}

export async function matchCorrelation(
	expectedCorrelationId: string,
	callback: CallbackParts,
	path: CorrelationPath,
): Promise<CorrelationVerdict> {
	const expected = requireExpectedId(expectedCorrelationId);
	let located: unknown;
	try {
		located = await path.evaluate(callback);
	} catch (error) {
		return conflict(
			`no correlation id at ${path.expression}: evaluating it failed (${error.message})`,
		);
	}
	const received = normalizeCorrelationId(located);
	if (received === undefined) {
		const found =
			located === undefined ? '' : ` (found ${describe(located)}, expected a string or number)`;
		return conflict(`no correlation id at ${path.expression}${found}`);
	}
	// Only the received id is echoed: the expected one stays private to the waiting run.
	if (!constantTimeEqual(received, expected)) {
		return conflict(
			`correlation id ${echo(received)} at ${path.expression} does not match this waiting run`,
		);
	}
	return { ok: true, received };
}

/** Judges a callback in the order above; on acceptance, the receipt the resumed run outputs. */
export async function judgeCallback(
	run: WaitingRun,
	callback: InboundCallback,
	nowMs: number,
): Promise<CallbackJudgement> {
	const authenticated = checkAuthWaitAndDeadline(run.auth, run.wait, callback, nowMs, {
		executionId: run.executionId,
		correlationId: run.expectedCorrelationId,
	});
	if (!authenticated.ok) return authenticated;

	// The credential never reaches the correlation expression, a refusal reason, or the stored receipt.
	const query = { ...callback.query };
	delete query[WAIT_ID_PARAM];
	const forwarded = 'parts' in authenticated ? authenticated : undefined;
	const parts: CallbackParts = {
		body: callback.body,
		...(forwarded?.parts ?? {
			headers: withoutHeader(callback.headers, credentialHeaderName(run.auth)),
			query,
		}),
	};
	const address = forwarded ? forwarded.address : callback.address;
	const bodyOnly = signatureNamesNoWait(run.auth, run.wait);
	const correlated = await matchCorrelation(
		run.expectedCorrelationId,
		bodyOnly ? { body: parts.body, headers: {}, query: {} } : parts,
		run.correlationPath,
	);
	if (!correlated.ok)
		return bodyOnly
			? conflict(
					`${correlated.reason} (read from the signed body only: in Wait Only mode the HMAC signature names no wait, and headers and the query are not signed)`,
				)
			: correlated;

	// Last, so only a callback that would otherwise be accepted is remembered.
	const { replayKey, replayUntilMs } = authenticated;
	const identity = waitIdentity(run.wait);
	const until = replayUntilMs ?? nowMs;
	if (
		replayKey !== undefined &&
		(!run.replay.claim(replayKey, identity, until, nowMs) ||
			(run.executionReplay !== undefined &&
				!claimInExecution(run.executionReplay, replayKey, identity, until, nowMs)))
	) {
		return {
			ok: false,
			status: 403,
			reason:
				'this signed callback was already accepted by another wait: a copy is not accepted here',
		};
	}
	return {
		ok: true,
		replayKey,
		receipt: {
			correlationId: correlated.received,
			...parts,
			receivedAt: new Date(nowMs).toISOString(),
			...(address === undefined ? {} : { address }),
		},
	};
}

/**
 * Judges the node's own failure notice: it must pass the same authentication, wait and deadline
 * checks as a callback (the node signs it with the callback credential), and then also carry this
 * wait's notice key. Knowing the notice key alone (it is in the execution's data, which anyone who
 * can view executions can read) fails no run.
 */
export function judgeNotice(
	run: Pick<WaitingRun, 'auth'> & { wait: WaitRecord },
	callback: InboundCallback,
	presentedNotice: string,
	nowMs: number,
): { ok: true } | Refusal<401 | 403 | 410> {
	const authenticated = checkAuthWaitAndDeadline(run.auth, run.wait, callback, nowMs);
	if (!authenticated.ok) return authenticated;
	return verifyNotice(run.wait, presentedNotice, rawText(callback.rawBody));
}

/**
 * Authentication (401/403), then the wait the URL names (403), then the deadline (410). A callback
 * forwarded by a Round-Trip Callback (FORWARD_HEADER) is authenticated by its forward proof for this
 * execution, wait and correlation id (proof.ts), not by the partner's credential, which it never carries.
 */
function checkAuthWaitAndDeadline(
	auth: CallbackAuth,
	wait: WaitState,
	callback: InboundCallback,
	nowMs: number,
	forwardTarget?: { executionId?: string; correlationId: string },
): AuthVerdict | OpenedForward | Refusal<410> {
	const forward = callback.headers[FORWARD_HEADER];
	const authenticated =
		forward !== undefined && forwardTarget?.executionId !== undefined
			? openForward(
					auth,
					forward,
					callback.rawBody,
					{ ...forwardTarget, executionId: forwardTarget.executionId, waitId: wait.waitId },
					nowMs,
				)
			: verifyCallback(auth, callback, nowMs, wait);
	if (!authenticated.ok) return authenticated;

	const presentedWaitId = callback.query[WAIT_ID_PARAM];
	const urlWaitId =
		typeof presentedWaitId === 'string'
			? presentedWaitId
			: presentedWaitId === undefined
				? ''
				: undefined;
	if (urlWaitId === undefined || !constantTimeEqual(urlWaitId, wait.waitId)) {
		return {
			ok: false,
			status: 403,
			reason: `the callback URL's ${WAIT_ID_PARAM} does not name this wait: it belongs to another wait of this execution`,
		};
	}
	const late = pastDeadline(wait, nowMs);
	if (late) return { ok: false, status: 410, reason: late };
	return authenticated;
}

function rawText(rawBody: Buffer | string): string {
	return typeof rawBody === 'string' ? rawBody : rawBody.toString('utf8');
}

/**
 * Whether an accepted callback is bound to this wait by nothing signed but its correlation id: HMAC
 * signs the wait id, which is empty in Wait Only mode (n8n's plain resume URL was sent). The id is
 * then read from the signed body alone. Were it read from a header or the query, a callback captured
 * for wait A could be resent, within the tolerance, to wait B with B's id there and resume B with A's
 * body; no replay memory can tell that copy from a genuine callback for B with the same body in the
 * same second, and the process memory is not shared between processes anyway.
 */
export function signatureNamesNoWait(auth: CallbackAuth, wait: WaitState): boolean {
	return auth.scheme === 'hmac' && wait.waitId === '';
}

/** One wait: its id, or in Wait Only mode (no id) the moment it began, which differs between waits. */
function waitIdentity(wait: WaitState): string {
	return `${wait.waitId}@${wait.startedAtMs}`;
}

/** The id the waiting run expects; the node always stores one (a fresh one for an empty Correlation ID). */
function requireExpectedId(expectedCorrelationId: string): string {
	const expected = normalizeCorrelationId(expectedCorrelationId);
	if (expected === undefined) {
		throw new Error(
			'The expected correlation ID is empty: the run would wait for a callback nothing can match',
		);
	}
	return expected;
}

function withoutHeader(headers: CallbackHeaders, droppedName: string): CallbackHeaders {
	const kept: CallbackHeaders = {};
	for (const [key, value] of Object.entries(headers)) {
		const name = key.toLowerCase();
		if (name !== droppedName) kept[name] = value;
	}
	return kept;
}

function describe(value: unknown): string {
	if (Array.isArray(value)) return `${value.length} values`;
	if (value === null) return 'null';
	const type = typeof value;
	return `${type === 'object' ? 'an' : 'a'} ${type}`;
}

function echo(id: string): string {
	const shown = id.length > MAX_ECHOED_ID_LENGTH ? `${id.slice(0, MAX_ECHOED_ID_LENGTH)}…` : id;
	return JSON.stringify(shown);
}

function conflict(reason: string): Refusal<409> {
	return { ok: false, status: 409, reason };
}

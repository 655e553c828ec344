import {
	type ICredentialsDecrypted,
	type ICredentialTestFunctions,
	type INodeCredentialTestResult,
	type ICredentialDataDecryptedObject,
	type IDataObject,
	type IExecuteFunctions,
	type IWebhookFunctions,
	type IWebhookResponseData,
	type IExecuteData,
	NodeOperationError,
} from 'n8n-workflow';

import { systemClock } from '../../core/clock';
import {
	answersAt,
	type CallbackAuth,
	type CallbackParts,
	compileResumeCondition,
	correlationIdFromAnswer,
	decodeWaitRecord,
	encodeWaitRecord,
	type ExecutionReplayLog,
	type FailureNotice,
	FIXED_CALLBACK_KEY,
	FIXED_MATCH_KEY,
	fixedMatchValue,
	MATCH_PROOF_KEY,
	matchProof,
	type AnswerIdPath,
	type InboundCallback,
	outboundRequest,
	type RawSettings,
	type TimedOutItem,
	ReplayMemory,
	reportFailure,
	ResumedWaits,
	sendOutbound,
	type SendOutcome,
	SETTING_NAMES,
	validateCallbackAuth,
	validateSettings,
	WAIT_RECORD_KEY,
	type WaitRecord,
} from '../../core/roundtrip';
import type { HttpRequest, HttpTransport } from '../../core/connectors/types';
import { credentialTestFailure } from '../shared/editorWords';
import { inEditorWords } from '../shared/errors';
import { n8nHttpTransport } from '../shared/httpTransport';
import { deliverKeptCallbacks, type Partner, watchKeptCallbacks } from '../shared/keptCallbacks';
import {
	afterExecutionSaved,
	customDataOf,
	executionContextData,
	keptCallbackPlace,
	saveCustomData,
	waitingStackEntry,
} from '../shared/n8nDoor';

/**
 * The Round-Trip Wait's side of n8n: where a wait is kept in the execution (its stack entry), what the
 * n8n running it can do (resume capabilities, lifecycle hooks), the callback credential, and the
 * settings as the node reads them. The send / wait / callback semantics are in core/roundtrip/.
 */
export const CALLBACK_CREDENTIAL = 'roundTripCallbackApi';
/**
 * The correlation id is also written to the execution's custom data, so users can filter executions
 * by it; the wait does not read it (n8n drops it silently when the execution already has 10 keys).
 * Version-1 waits (saved before the upgrade) kept their id and record there: still read.
 */
export const CORRELATION_KEY = 'correlationId';
/** Signed callbacks this process has accepted: a copy at another wait is refused (see core/roundtrip/replay.ts). */
export const REPLAY_MEMORY = new ReplayMemory();
/** Used where n8n itself may resume a wait twice (n8n 1.x, see core/roundtrip/resumeOnce.ts). */
export const RESUMED_WAITS = new ResumedWaits();

/** The names of the node's parameters, as validateSettings reads them. */
const MISSING = '\u0000missing';

export function callbackAuthFrom(credentials: ICredentialDataDecryptedObject): CallbackAuth {
	const toleranceSec =
		credentials.toleranceSec === undefined ? undefined : Number(credentials.toleranceSec);
	switch (credentials.scheme) {
		case 'standardWebhooks':
			return { scheme: 'standardWebhooks', secret: String(credentials.secret ?? ''), toleranceSec };
		case 'header':
			return {
				scheme: 'header',
				token: String(credentials.token ?? ''),
				headerName: String(credentials.headerName ?? '') || undefined,
			};
		case 'basic':
			return {
				scheme: 'basic',
				user: String(credentials.user ?? ''),
				password: String(credentials.password ?? ''),
			};
		default:
			return {
				scheme: 'hmac',
				secret: String(credentials.secret ?? ''),
				signatureHeader: String(credentials.signatureHeader ?? '') || undefined,
				toleranceSec,
			};
	}
}

export type Refuse = (status: number, error: string, waiting?: boolean) => IWebhookResponseData;

/** The callback credential's test: whether its settings can authenticate callbacks. */
export async function roundTripCallbackApiTest(
	this: ICredentialTestFunctions,
	credential: ICredentialsDecrypted,
): Promise<INodeCredentialTestResult> {
	try {
		validateCallbackAuth(callbackAuthFrom(credential.data ?? {}));
	} catch (error) {
		return credentialTestFailure(error);
	}
	return { status: 'OK', message: 'These settings can authenticate callbacks' };
}

/** The node's own notice, checked, that its request failed after the wait was saved: the run resumes and fails with that message. */
export function failFromNotice(
	context: IWebhookFunctions,
	body: string,
	refuse: Refuse,
): IWebhookResponseData {
	const notice = JSON.parse(body) as FailureNotice;
	// n8n's resume honours a stack entry's `resumeError` (set by n8n itself for failed sub-workflows):
	// the resumed node fails with it instead of passing its data on. Not a public API of n8n 2.41 (README).
	const entry = waitingStackEntry(context);
	if (!entry)
		return refuse(
			500,
			'this n8n does not let the node fail its waiting run; the run waits until its timeout',
		);
	entry.metadata = {
		...entry.metadata,
		resumeError: { name: 'Error', message: notice.requestFailed, description: notice.description },
	};
	return { workflowData: [[{ json: {} }], []], webhookResponse: { failed: true } };
}

/**
 * Keeps the wait record in this node's own entry of the execution's node stack (its `metadata`):
 * when the node puts the run to wait, n8n puts that very entry back on the stack and saves it with
 * the waiting execution, and hands it back to the node's webhook (`n8n-core` `WorkflowExecute`,
 * `WebhookContext`; README). Unlike custom data (10 keys per execution, further ones dropped
 * silently) nothing there is dropped: it lasts exactly as long as the wait. Fails the node at once
 * when this n8n offers no such entry, rather than letting the run wait for a callback it would refuse.
 */
export function keepWaitRecord(
	context: IExecuteFunctions,
	executeData: IExecuteData,
	wait: WaitRecord,
) {
	if (typeof executeData !== 'object' || executeData === null)
		throw new NodeOperationError(
			context.getNode(),
			'This n8n gives the node no stack entry to keep its wait in, so no callback could resume the run',
		);
	executeData.metadata = {
		...executeData.metadata,
		[WAIT_RECORD_KEY]: encodeWaitRecord(wait),
	} as IExecuteData['metadata'];
}

/**
 * n8n runs no node code when a wait times out: it passes the waiting node's stored input on. Storing
 * the "Timed Out" item as that input, on output 1, makes the timeout land there; n8n 1.x (no
 * `resumeControl`) passes only a disabled node's first input on: the timeout leaves by the Callback
 * output (README).
 */
export function leaveTimeoutBy(
	executeData: IExecuteData,
	timedOut: TimedOutItem,
	resumeControl: boolean,
): void {
	const items = [{ json: { ...timedOut }, pairedItem: { item: 0 } }];
	if (resumeControl) {
		executeData.data = { main: [[], items] };
		executeData.metadata = { ...executeData.metadata, forwardAllOutputs: true };
	} else executeData.data = { main: [items] };
}

/** Where the execution's own replay log lives in its data (saved by n8n with the resume; README). */
const EXECUTION_REPLAY_KEY = 'roundTripWait:accepted';

/**
 * The signed callbacks earlier waits of this execution accepted, in the execution's context data
 * (n8nDoor.ts `executionContextData`: saved by n8n together with the resume, so only the resume that
 * happened is recorded). Undefined where n8n hands the webhook none (capability
 * `executionContextData`): the process's REPLAY_MEMORY is then all there is.
 */
export function executionReplayLogOf(context: IWebhookFunctions): ExecutionReplayLog | undefined {
	const contextData = executionContextData(context);
	if (!contextData) return undefined;
	return (contextData[EXECUTION_REPLAY_KEY] ??= {}) as ExecutionReplayLog;
}

/** This wait's record: in the waiting node's stack entry, or (a wait saved by version 1 of the record) in custom data. */
export function waitRecordOf(context: IWebhookFunctions): WaitRecord | undefined {
	const kept = waitingStackEntry(context)?.metadata?.[WAIT_RECORD_KEY];
	if (kept !== undefined) return decodeWaitRecord(kept);
	const customData = customDataOf(context);
	return decodeWaitRecord(customData?.get(WAIT_RECORD_KEY), customData?.get(CORRELATION_KEY));
}

/**
 * Runs `send` once n8n has saved this execution as waiting, so that a callback sent at once finds
 * the run waiting: after n8n's own `workflowExecuteAfter` handlers (n8nDoor.ts `afterExecutionSaved`).
 * Returns false when this n8n has no such hooks (capability `executionHooks`); the caller then sends at once.
 */
export function afterWaitIsSaved(context: IExecuteFunctions, send: () => Promise<void>): boolean {
	return afterExecutionSaved(context, async (run) => {
		// A run that failed or was cancelled after this node is not waiting: nothing to ask for.
		if (run?.status !== 'waiting' || !run.waitTill) return;
		// Not awaited: the partner may answer slowly; n8n finishes the run's bookkeeping meanwhile.
		void send().catch((error: Error) =>
			context.logger.error(`Round-Trip Wait: sending the request failed: ${error.message}`),
		);
	});
}

/** A callback as the core judges it: headers, the raw body (what signatures cover), the parsed body, the query. */
export async function readCallback(
	context: IWebhookFunctions,
): Promise<InboundCallback & { rawBody: Buffer }> {
	const request = context.getRequestObject() as ReturnType<
		IWebhookFunctions['getRequestObject']
	> & {
		rawBody?: Buffer;
		readRawBody?: () => Promise<void>;
	};
	if (request.rawBody === undefined && request.readRawBody) await request.readRawBody();
	const query = { ...(request.query as IDataObject) };
	delete query.signature; // n8n's resume token: a secret of the run, not callback data
	return {
		headers: request.headers,
		rawBody: request.rawBody ?? Buffer.alloc(0),
		body: request.body,
		query,
		// Express's address of the caller (behind a proxy: as n8n's trust-proxy setting makes it).
		...(typeof request.ip === 'string' ? { address: request.ip } : {}),
	};
}

/**
 * The reason a judged callback does not resume the run: its Resume Condition is not true for it
 * (a status event the run does not wait for). Undefined: it resumes.
 */
export async function unmetResumeCondition(
	context: IWebhookFunctions,
	receipt: CallbackParts,
): Promise<string | undefined> {
	const expression = context.getNodeParameter('resumeCondition', '') as string;
	if (typeof expression !== 'string' || expression.trim() === '') return undefined;
	const { matched, why } = await compileResumeCondition(expression).matches(receipt);
	return matched ? undefined : `the callback does not meet the Resume Condition: ${why}`;
}

/** n8n resumes a waiting execution once: the node takes exactly one input item. */
export function requireOneItem(context: IExecuteFunctions): void {
	const items = context.getInputData();
	if (items.length !== 1)
		throw new NodeOperationError(
			context.getNode(),
			`Round-Trip Wait waits for one callback per execution, but received ${items.length} items`,
			{
				description:
					'n8n resumes a waiting execution once. Start one execution per request, e.g. with the Poll Trigger\'s "One Run per Item" or an Execute Workflow node per item.',
			},
		);
}

/** The partner a fixed-URL wait waits on: its callback credential (id, name) and what it authenticates with. */
export function partnerOf(context: IExecuteFunctions, auth: CallbackAuth): Partner {
	const credential = context.getNode().credentials?.[CALLBACK_CREDENTIAL];
	return { credentialId: String(credential?.id ?? ''), credentialName: credential?.name, auth };
}

/**
 * In Callback URL "Fixed" mode: writes what a Round-Trip Callback node finds this wait by into the
 * execution's custom data, which n8n saves with the waiting execution before the request goes out:
 * the partner (the callback credential's id) with the correlation id, this wait's callback URL, and
 * the match proof over them and the execution id (core/roundtrip/proof.ts), which only a holder of
 * the credential can make: the Round-Trip Callback forwards to no run without it. Fails the node when
 * n8n did not keep them (no custom data, or its 10 keys taken), rather than letting the run wait for
 * callbacks that could never find it.
 */
export function keepFixedUrlMatch(
	context: IExecuteFunctions,
	partner: Partner,
	correlationId: string,
	callbackUrl: string,
): Record<string, string> {
	const credentialId = partner.credentialId;
	const customData = customDataOf(context);
	const kept: Record<string, string> = {
		[FIXED_MATCH_KEY]: fixedMatchValue(credentialId, correlationId),
		[FIXED_CALLBACK_KEY]: callbackUrl,
		[MATCH_PROOF_KEY]: matchProof(partner.auth, {
			credentialId,
			correlationId,
			executionId: context.getExecutionId(),
			callbackUrl,
		}),
	};
	for (const [key, value] of Object.entries(kept)) customData?.set(key, value);
	const lost = Object.entries(kept).filter(([key, value]) => customData?.get(key) !== value);
	if (!credentialId || lost.length > 0)
		throw new NodeOperationError(
			context.getNode(),
			`Callback URL "Fixed": n8n did not keep ${
				lost
					.map(([key]) => key)
					.join(', ')
					.replace(/, ([^,]*)$/, ' and $1') || 'the credential'
			} in the execution's custom data, so no Round-Trip Callback node could find this run`,
			{
				description: customData
					? 'n8n keeps at most 10 custom-data keys per execution and this one has them: set fewer before this node (an Execution Data node), or use Callback URL "Per Wait"'
					: 'This n8n offers the node no execution custom data: use Callback URL "Per Wait"',
			},
		);
	return kept;
}

/** The correlation id in custom data, for filtering executions only: the wait does not depend on it (it is in the stack entry). */
export function keepCorrelationIdForFiltering(context: IExecuteFunctions, correlationId: string) {
	const customData = customDataOf(context);
	customData?.set(CORRELATION_KEY, correlationId);
	if (customData && customData.get(CORRELATION_KEY) !== correlationId)
		context.logger.warn(
			`Round-Trip Wait: n8n did not keep the correlation id in the execution's custom data (at most 10 keys per execution, and this one has them): executions cannot be filtered by it; the wait itself is unaffected`,
		);
}

export function readSettings(context: IExecuteFunctions): RawSettings {
	const raw: RawSettings = {};
	for (const name of SETTING_NAMES) {
		// Request fields are hidden, and not stored, in Wait Only mode: read as absent.
		raw[name] = context.getNodeParameter(name, 0, MISSING);
		if (raw[name] === MISSING) delete raw[name];
	}
	return raw;
}

/** The Response Body, checked before the wait began. */
export function responseBodyOf(value: unknown): IDataObject {
	return (typeof value === 'string' ? JSON.parse(value) : value) as IDataObject;
}

/** What sendRequest needs besides the request: the wait it belongs to, and how to tell the waiting run. */
interface SendContext {
	correlationId: string;
	callbackUrl: string;
	wait: WaitRecord;
	callbackAuth: CallbackAuth;
	/** Whether n8n fails a resumed node (capability resumeControl): the request may then go out once the wait is saved. */
	afterSave: boolean;
}

/**
 * Sends the wait's request: once n8n has saved the wait where it can and n8n answers at its own
 * callback URL (a failure then reaches the waiting run as the node's own notice, which fails it),
 * else now (a failure fails the node). Returns what the node's output says about the request.
 */
export async function sendRequest(
	context: IExecuteFunctions,
	settings: NonNullable<ReturnType<typeof validateSettings>['request']>,
	{ correlationId, callbackUrl, wait, callbackAuth, afterSave }: SendContext,
): Promise<IDataObject> {
	const request = outboundRequest(settings, correlationId, callbackUrl);
	const http = n8nHttpTransport(context, { auth: settings.auth });
	const toN8n = n8nHttpTransport(context, { auth: { kind: 'none' } });
	const send = async () => {
		const sent = await sendOutbound(http, request);
		if (sent.ok) return;
		// The node has returned: tell the waiting run, which then fails with this message.
		const notice: FailureNotice = {
			requestFailed: inEditorWords(sent.message, context.getNode()),
			description: sent.description,
		};
		const status = await reportFailure(toN8n, callbackUrl, wait, notice, callbackAuth, systemClock);
		if (status !== 200)
			context.logger.error(
				`Round-Trip Wait could not fail its run after the request failed (${notice.requestFailed}); the run waits until its timeout`,
			);
	};
	// A failed request is reported through the callback URL: one n8n cannot reach rules that out.
	const reportable = afterSave && (await answersAt(toN8n, callbackUrl));
	if (afterSave && !reportable)
		context.logger.warn(
			`Round-Trip Wait: n8n cannot reach its own callback URL ${new URL(callbackUrl).origin} (WEBHOOK_URL), so it could not fail the run should the request fail after the wait is saved: the request goes out before, and a partner calling back at once gets n8n's 409 and must retry`,
		);
	if (reportable && afterWaitIsSaved(context, send))
		return { method: request.method, url: request.url, sent: 'once n8n has saved the wait' };
	// No lifecycle hooks here: send now; a partner calling back before the save gets n8n's 409 and retries (README).
	const sent = await sendNow(context, http, request);
	return {
		method: request.method,
		url: request.url,
		status: sent.status,
		body: sent.body as IDataObject,
	};
}

/** Sends the request before the wait: a failure fails the node (the run does not wait). */
async function sendNow(
	context: IExecuteFunctions,
	http: HttpTransport,
	request: HttpRequest,
): Promise<Extract<SendOutcome, { ok: true }>> {
	const sent = await sendOutbound(http, request);
	if (!sent.ok)
		throw new NodeOperationError(
			context.getNode(),
			inEditorWords(sent.message, context.getNode()),
			{
				description: sent.description,
			},
		);
	return sent;
}

/**
 * Send and Wait with Correlation ID From "The Partner's Answer": the partner assigns its id for the
 * request only when it answers, so the request goes out now, before the wait, and the run waits for
 * the id read from the answer (Correlation ID in Answer). A failed request, or an answer without an
 * id, fails the node before the run waits. A partner calling the fixed URL before the wait is saved
 * finds no run for the id yet: its callback is kept for this run (claimKeptCallbacksOnceWaiting).
 */
export async function sendForPartnerId(
	context: IExecuteFunctions,
	settings: NonNullable<ReturnType<typeof validateSettings>['request']>,
	answerIdPath: AnswerIdPath,
	{ correlationId, callbackUrl }: Pick<SendContext, 'correlationId' | 'callbackUrl'>,
): Promise<{ partnerId: string; request: IDataObject }> {
	const request = outboundRequest(settings, correlationId, callbackUrl);
	const sent = await sendNow(context, n8nHttpTransport(context, { auth: settings.auth }), request);
	return {
		partnerId: await correlationIdFromAnswer(answerIdPath, sent),
		request: {
			method: request.method,
			url: request.url,
			status: sent.status,
			body: sent.body as IDataObject,
			correlationIdSent: correlationId,
		},
	};
}

/**
 * Callback URL "Fixed", once n8n has saved the wait: writes the match the Round-Trip Callback finds
 * this run by (in queue mode n8n's main writes the run's custom data only later), then claims the
 * callbacks the Round-Trip Callback kept for it because they came before the run waited, and hands
 * them to this run (n8n resumes it with the first that meets its checks and Resume Condition). In this
 * order, a callback kept after the claim finds the match and is handed on by the Round-Trip Callback
 * (core/roundtrip/earlyCallbacks.ts). Where this n8n has no lifecycle hooks, n8n's own save of the
 * custom data is all there is, and nothing kept is claimed.
 */
export function claimKeptCallbacksOnceWaiting(
	context: IExecuteFunctions,
	fixedMatch: Record<string, string>,
	partner: Partner,
	correlationId: string,
	callbackUrl: string,
): void {
	afterExecutionSaved(context, async (run) => {
		if (run?.status !== 'waiting' || !run.waitTill) return;
		try {
			await saveCustomData(context.getExecutionId(), fixedMatch);
		} catch (error) {
			context.logger.error(
				`Round-Trip Wait: writing the fixed URL's match to custom data failed (${(error as Error).message}); n8n writes it with the run's custom data, and callbacks kept for it are not claimed`,
			);
			return;
		}
		const place = keptCallbackPlace();
		if (!place) return;
		watchKeptCallbacks(context, partner);
		const target = { url: callbackUrl, executionId: context.getExecutionId() };
		// Not awaited: handing them on resumes this run; n8n finishes its bookkeeping of the wait meanwhile.
		void deliverKeptCallbacks(context, place, partner, target, correlationId).catch(
			(error: Error) =>
				context.logger.error(
					`Round-Trip Wait: claiming the callbacks kept for this run failed: ${error.message}`,
				),
		);
	});
}

import {
	type ICredentialDataDecryptedObject,
	type ICredentialsDecrypted,
	type ICredentialTestFunctions,
	type IDataObject,
	type IExecuteFunctions,
	type INodeCredentialTestResult,
	type INodeExecutionData,
	type INodeType,
	type INodeTypeDescription,
	type IWebhookFunctions,
	type IWebhookResponseData,
	type IExecuteData,
	NodeConnectionTypes,
	NodeOperationError,
} from 'n8n-workflow';

import { systemClock } from '../../core/clock';
import {
	type CallbackAuth,
	answersAt,
	callbackUrlFor,
	compileCorrelationPath,
	decodeWaitRecord,
	DEFAULT_CORRELATION_PATH,
	encodeWaitRecord,
	type ExecutionReplayLog,
	type FailureNotice,
	FIELD_LABELS,
	judgeCallback,
	judgeNotice,
	newCorrelationId,
	newWait,
	NOTICE_HEADER,
	outboundRequest,
	type RawSettings,
	ReplayMemory,
	reportFailure,
	ResumedWaits,
	resumeDeadline,
	sendOutbound,
	timedOutItem,
	validateCallbackAuth,
	validateSettings,
	WAIT_RECORD_KEY,
	type WaitRecord,
} from '../../core/roundtrip';
import { customDataOf } from '../shared/customData';
import { toNodeError } from '../shared/errors';
import { HTTP_CREDENTIAL, n8nHttpTransport } from '../shared/httpTransport';
import { genericCredentials, httpAuthProperties, timeUnitOptions } from '../shared/parameters';

const CALLBACK_CREDENTIAL = 'roundTripCallbackApi';
/**
 * The correlation id is also written to the execution's custom data, so users can filter executions
 * by it; the wait does not read it (n8n drops it silently when the execution already has 10 keys).
 * Version-1 waits (saved before the upgrade) kept their id and record there: still read.
 */
const CORRELATION_KEY = 'correlationId';
/** Signed callbacks this process has accepted: a copy at another wait is refused (see core/roundtrip/replay.ts). */
const REPLAY_MEMORY = new ReplayMemory();
/** Used where n8n itself may resume a wait twice (n8n 1.x, see core/roundtrip/resumeOnce.ts). */
const RESUMED_WAITS = new ResumedWaits();

/** The names of the node's parameters, as validateSettings reads them. */
const SETTING_NAMES = Object.keys(FIELD_LABELS) as Array<keyof typeof FIELD_LABELS>;
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

// The resume webhook is n8n's own per-execution URL (restartWebhook), so there is nothing to register
// on a third-party service: checkExists/create/delete have no meaning here. Not usable as an AI tool:
// a tool call cannot pause the run for hours waiting for a callback.
// eslint-disable-next-line @n8n/community-nodes/webhook-lifecycle-complete, @n8n/community-nodes/node-usable-as-tool
export class RoundTripWait implements INodeType {
	description: INodeTypeDescription = {
		displayName: 'Round-Trip Wait',
		name: 'roundTripWait',
		icon: { light: 'file:roundTripWait.svg', dark: 'file:roundTripWait.dark.svg' },
		group: ['organization'],
		version: 1,
		subtitle:
			'={{$parameter["mode"] === "sendAndWait" ? "Send, then wait for callback" : "Wait for callback"}}',
		description:
			"Pauses the run until the external system calls back with this run's correlation ID, authenticated",
		defaults: { name: 'Round-Trip Wait' },
		inputs: [NodeConnectionTypes.Main],
		outputs: [NodeConnectionTypes.Main, NodeConnectionTypes.Main],
		outputNames: ['Callback', 'Timed Out'],
		credentials: [
			{ name: 'roundTripCallbackApi', required: true, testedBy: 'roundTripCallbackApiTest' },
			{
				name: HTTP_CREDENTIAL,
				required: true,
				displayOptions: { show: { mode: ['sendAndWait'], authentication: ['durableHttpApi'] } },
			},
			...genericCredentials({ mode: ['sendAndWait'] }),
		],
		webhooks: [
			{
				name: 'default',
				httpMethod: 'POST',
				responseMode: 'onReceived',
				// An accepted callback is answered by n8n once it has moved the run out of "waiting":
				// a second callback racing it gets n8n's error instead of a 200 for a resume that never happens.
				responseCode: '={{$parameter["responseCode"]}}',
				responseData: '',
				path: '',
				restartWebhook: true,
			},
		],
		properties: [
			{
				displayName: 'Mode',
				name: 'mode',
				type: 'options',
				noDataExpression: true,
				default: 'sendAndWait',
				options: [
					{
						name: 'Send and Wait',
						value: 'sendAndWait',
						description:
							'This node sends the request (with the correlation ID and callback URL), then waits',
					},
					{
						name: 'Wait Only',
						value: 'waitOnly',
						description:
							'An earlier node sent the request with {{ $execution.resumeUrl }} and the correlation ID; this node waits',
					},
				],
			},
			{
				displayName: 'Correlation ID',
				name: 'correlationId',
				type: 'string',
				default: '',
				placeholder: 'e.g. {{ $json.orderId }}',
				description:
					'The ID the callback must carry. Leave empty for a fresh random ID. In "Wait Only" mode, use the ID the earlier node sent.',
			},
			httpAuthProperties({ mode: ['sendAndWait'] }, undefined, [
				{
					name: 'Durable Triggers HTTP API',
					value: 'durableHttpApi',
					description:
						"This package's own credential (kept for workflows made with it); the URL may be relative to its base URL",
				},
			]),
			{
				displayName: 'Method',
				name: 'method',
				type: 'options',
				default: 'POST',
				displayOptions: { show: { mode: ['sendAndWait'] } },
				options: ['DELETE', 'GET', 'PATCH', 'POST', 'PUT'].map((m) => ({ name: m, value: m })),
			},
			{
				displayName: 'URL',
				name: 'url',
				type: 'string',
				default: '',
				required: true,
				placeholder: 'https://partner.example.com/jobs',
				displayOptions: { show: { mode: ['sendAndWait'] } },
			},
			{
				displayName: 'Body',
				name: 'body',
				type: 'json',
				default: '{}',
				displayOptions: { show: { mode: ['sendAndWait'] } },
				description:
					'JSON body. The correlation ID and callback URL are added to it under the field names below, and always sent as X-Correlation-ID and X-Callback-URL headers.',
			},
			{
				displayName: 'Correlation ID Field',
				name: 'correlationIdField',
				type: 'string',
				default: 'correlationId',
				displayOptions: { show: { mode: ['sendAndWait'] } },
				description:
					'Body field that carries the correlation ID; empty to leave the body as written',
			},
			{
				displayName: 'Callback URL Field',
				name: 'callbackUrlField',
				type: 'string',
				default: 'callbackUrl',
				displayOptions: { show: { mode: ['sendAndWait'] } },
				description:
					'Body field that carries the URL to call back; empty to leave the body as written',
			},
			{
				displayName: 'Headers',
				name: 'headers',
				type: 'json',
				default: '{}',
				displayOptions: { show: { mode: ['sendAndWait'] } },
			},
			{
				displayName: 'Correlation ID Location',
				name: 'correlationIdPath',
				type: 'string',
				default: DEFAULT_CORRELATION_PATH,
				description:
					'JSONata over { body, headers, query } of the callback, e.g. body.correlationId, query.correlationId or headers."x-correlation-token"',
			},
			{
				displayName: 'Timeout',
				name: 'timeoutAmount',
				type: 'number',
				default: 1,
				typeOptions: { minValue: 1 },
				description:
					'After this long without an accepted callback, the run continues on the "Timed Out" output',
			},
			{
				displayName: 'Timeout Unit',
				name: 'timeoutUnit',
				type: 'options',
				default: 'hours',
				options: timeUnitOptions('seconds', 'minutes', 'hours', 'days'),
			},
			{
				displayName: 'Response Code',
				name: 'responseCode',
				type: 'number',
				default: 200,
				description: 'Status code an accepted callback gets back',
			},
			{
				displayName: 'Response Body',
				name: 'responseBody',
				type: 'json',
				default: '{ "received": true }',
				description: 'JSON an accepted callback gets back',
			},
		],
	};

	methods = {
		credentialTest: {
			async roundTripCallbackApiTest(
				this: ICredentialTestFunctions,
				credential: ICredentialsDecrypted,
			): Promise<INodeCredentialTestResult> {
				try {
					validateCallbackAuth(callbackAuthFrom(credential.data ?? {}));
				} catch (error) {
					return { status: 'Error', message: error.message };
				}
				return { status: 'OK', message: 'These settings can authenticate callbacks' };
			},
		},
	};

	async execute(this: IExecuteFunctions): Promise<INodeExecutionData[][]> {
		const items = this.getInputData();
		if (items.length !== 1) {
			throw new NodeOperationError(
				this.getNode(),
				`Round-Trip Wait waits for one callback per execution, but received ${items.length} items`,
				{
					description:
						'n8n resumes a waiting execution once. Start one execution per request, e.g. with the Poll Trigger\'s "One Run per Item" or an Execute Workflow node per item.',
				},
			);
		}
		try {
			const settings = validateSettings(readSettings(this));
			const callbackAuth = callbackAuthFrom(await this.getCredentials(CALLBACK_CREDENTIAL));
			validateCallbackAuth(callbackAuth);
			const correlationId = settings.correlationId ?? newCorrelationId();
			const waitStartedAt = Date.now();
			const deadline = resumeDeadline(waitStartedAt, settings.timeout);
			const wait = newWait(correlationId, waitStartedAt, deadline, settings.mode === 'sendAndWait');
			// The wait is kept with this node's entry of the execution's stack (see keepWaitRecord): checked
			// before anything is sent, so a wait that could not be kept fails here instead of waiting in vain.
			const executeData = this.getExecuteData();
			keepWaitRecord(this, executeData, wait);
			const callbackUrl = callbackUrlFor(
				this.evaluateExpression('{{ $execution.resumeUrl }}', 0) as string,
				wait.waitId,
			);

			const waiting: IDataObject = {
				waiting: true,
				correlationId,
				callbackUrl,
				callbackMethod: 'POST',
				deadline: new Date(deadline).toISOString(),
				correlationIdLocation: settings.correlationPath.expression,
			};
			const resume = resumeCapabilities(this);
			if (settings.request) {
				const request = outboundRequest(settings.request, correlationId, callbackUrl);
				const http = n8nHttpTransport(this, { auth: settings.request.auth });
				const send = async () => {
					const sent = await sendOutbound(http, request);
					if (sent.ok) return;
					// The node has returned: tell the waiting run, which then fails with this message.
					const notice: FailureNotice = {
						requestFailed: sent.message,
						description: sent.description,
					};
					const status = await reportFailure(
						n8nHttpTransport(this, { auth: { kind: 'none' } }),
						callbackUrl,
						wait,
						notice,
						callbackAuth,
						systemClock,
					);
					if (status !== 200)
						this.logger.error(
							`Round-Trip Wait could not fail its run after the request failed (${sent.message}); the run waits until its timeout`,
						);
				};
				// A failed request is reported through the callback URL: one n8n cannot reach rules that out.
				const reportable =
					resume.failsResumedNode &&
					(await answersAt(n8nHttpTransport(this, { auth: { kind: 'none' } }), callbackUrl));
				if (resume.failsResumedNode && !reportable)
					this.logger.warn(
						`Round-Trip Wait: n8n cannot reach its own callback URL ${new URL(callbackUrl).origin} (WEBHOOK_URL), so it could not fail the run should the request fail after the wait is saved: the request goes out before, and a partner calling back at once gets n8n's 409 and must retry`,
					);
				if (reportable && afterWaitIsSaved(this, send)) {
					waiting.request = {
						method: request.method,
						url: request.url,
						sent: 'once n8n has saved the wait',
					};
				} else {
					// No lifecycle hooks here: send now; a partner calling back before the save gets n8n's 409 and retries (README).
					const sent = await sendOutbound(http, request);
					if (!sent.ok)
						throw new NodeOperationError(this.getNode(), sent.message, {
							description: sent.description,
						});
					waiting.request = {
						method: request.method,
						url: request.url,
						status: sent.status,
						body: sent.body as IDataObject,
					};
				}
			}

			// For filtering executions only; the wait does not depend on it (it is in the stack entry).
			const customData = customDataOf(this);
			customData?.set(CORRELATION_KEY, correlationId);
			if (customData && customData.get(CORRELATION_KEY) !== correlationId)
				this.logger.warn(
					`Round-Trip Wait: n8n did not keep the correlation id in the execution's custom data (at most 10 keys per execution, and this one has them): executions cannot be filtered by it; the wait itself is unaffected`,
				);
			// n8n runs no node code when a wait times out: it passes the waiting node's stored input on.
			// Storing the "Timed Out" item as that input, on output 1, makes the timeout land there.
			const timedOut = [
				{
					json: { ...timedOutItem(correlationId, waitStartedAt, deadline, deadline) },
					pairedItem: { item: 0 },
				},
			];
			if (resume.forwardsAllOutputs) {
				executeData.data = { main: [[], timedOut] };
				executeData.metadata = { ...executeData.metadata, forwardAllOutputs: true };
			} else {
				// n8n 1.x passes only a disabled node's first input on: the timeout leaves by the Callback output (README).
				executeData.data = { main: [timedOut] };
			}
			await this.putExecutionToWait(new Date(deadline));
			return [[{ json: waiting, pairedItem: { item: 0 } }], []];
		} catch (error) {
			throw toNodeError(this.getNode(), error, 0);
		}
	}

	async webhook(this: IWebhookFunctions): Promise<IWebhookResponseData> {
		const request = this.getRequestObject() as ReturnType<IWebhookFunctions['getRequestObject']> & {
			rawBody?: Buffer;
			readRawBody?: () => Promise<void>;
		};
		const response = this.getResponseObject();
		// n8n resumes the run whatever a throwing webhook() meant, so every failure here is answered and the run keeps waiting.
		const refuse = (status: number, error: string, waiting = true): IWebhookResponseData => {
			response.status(status).json({ error, waiting });
			return { noWebhookResponse: true };
		};
		try {
			const wait = waitRecordOf(this);
			if (!wait)
				return refuse(409, 'this execution is not waiting in a Round-Trip Wait node', false);
			if (request.rawBody === undefined && request.readRawBody) await request.readRawBody();
			const rawBody = request.rawBody ?? Buffer.alloc(0);
			const auth = callbackAuthFrom(await this.getCredentials(CALLBACK_CREDENTIAL));

			const query = { ...(request.query as IDataObject) };
			delete query.signature; // n8n's resume token: a secret of this run, not callback data
			const inbound = { headers: request.headers, rawBody, body: request.body, query };

			// The node's own "request failed" notice: the callback's checks first, then this wait's notice key.
			const notice = request.headers[NOTICE_HEADER];
			if (notice !== undefined) {
				const verdict = judgeNotice({ auth, wait }, inbound, String(notice), Date.now());
				if (!verdict.ok) return refuse(verdict.status, verdict.reason, verdict.status !== 410);
				return failFromNotice(this, rawBody.toString('utf8'), refuse);
			}

			const judgement = await judgeCallback(
				{
					auth,
					correlationPath: compileCorrelationPath(
						this.getNodeParameter('correlationIdPath') as string,
					),
					expectedCorrelationId: wait.correlationId,
					wait,
					replay: REPLAY_MEMORY,
					executionReplay: executionReplayLogOf(this),
				},
				inbound,
				Date.now(),
			);
			if (!judgement.ok)
				return refuse(judgement.status, judgement.reason, judgement.status !== 410);
			// n8n 2.x resumes a waiting execution once (it updates it only while still waiting); n8n 1.x
			// (no `customData` on node contexts, see resumeCapabilities) may resume it again: refused here.
			if (
				typeof (this as unknown as { customData?: { set?: unknown } }).customData?.set !==
					'function' &&
				!RESUMED_WAITS.claim(wait.noticeKey, wait.deadlineMs, Date.now())
			) {
				return refuse(409, 'this wait was already resumed by another callback', false);
			}
			// No response here: n8n answers (Response Code, this body) once the run has left "waiting".
			return {
				workflowData: [[{ json: judgement.receipt as unknown as IDataObject }], []],
				webhookResponse: responseBodyOf(this.getNodeParameter('responseBody')),
			};
		} catch (error) {
			return refuse(500, `The callback could not be checked: ${error.message}`);
		}
	}
}

type Refuse = (status: number, error: string, waiting?: boolean) => IWebhookResponseData;

/** The node's own notice, checked, that its request failed after the wait was saved: the run resumes and fails with that message. */
function failFromNotice(
	context: IWebhookFunctions,
	body: string,
	refuse: Refuse,
): IWebhookResponseData {
	const notice = JSON.parse(body) as FailureNotice;
	// n8n's resume honours a stack entry's `resumeError` (set by n8n itself for failed sub-workflows):
	// the resumed node fails with it instead of passing its data on. Not a public API of n8n 2.41 (README).
	const entry = waitingEntryOf(context);
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

type StackEntry = { node?: { name?: string }; metadata?: IDataObject };

/**
 * Keeps the wait record in this node's own entry of the execution's node stack (its `metadata`):
 * when the node puts the run to wait, n8n puts that very entry back on the stack and saves it with
 * the waiting execution, and hands it back to the node's webhook (`n8n-core` `WorkflowExecute`,
 * `WebhookContext`; README). Unlike custom data (10 keys per execution, further ones dropped
 * silently) nothing there is dropped: it lasts exactly as long as the wait. Fails the node at once
 * when this n8n offers no such entry, rather than letting the run wait for a callback it would refuse.
 */
function keepWaitRecord(context: IExecuteFunctions, executeData: IExecuteData, wait: WaitRecord) {
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

/** The waiting node's entry of the run's stack, as n8n hands it to the webhook (internal to n8n-core). */
function waitingEntryOf(context: IWebhookFunctions): StackEntry | undefined {
	const stack = (
		context as unknown as {
			runExecutionData?: { executionData?: { nodeExecutionStack?: StackEntry[] } };
		}
	).runExecutionData?.executionData?.nodeExecutionStack;
	const name = context.getNode().name;
	return stack?.find((entry) => entry.node?.name === name);
}

/** Where the execution's own replay log lives in its data (saved by n8n with the resume; README). */
const EXECUTION_REPLAY_KEY = 'roundTripWait:accepted';

/**
 * The signed callbacks earlier waits of this execution accepted, in the execution's context data
 * (`executionData.contextData`, saved with the execution). What judgeCallback adds to it is written
 * by n8n together with the resume (`ActiveExecutions.add`: the conditional update that moves the run
 * out of "waiting" writes this very data), so only the resume that happened is recorded.
 */
function executionReplayLogOf(context: IWebhookFunctions): ExecutionReplayLog | undefined {
	const executionData = (
		context as unknown as {
			runExecutionData?: { executionData?: { contextData?: Record<string, IDataObject> } };
		}
	).runExecutionData?.executionData;
	if (!executionData) return undefined;
	const contextData = (executionData.contextData ??= {});
	return (contextData[EXECUTION_REPLAY_KEY] ??= {}) as unknown as ExecutionReplayLog;
}

/** This wait's record: in the waiting node's stack entry, or (a wait saved by version 1 of the record) in custom data. */
function waitRecordOf(context: IWebhookFunctions): WaitRecord | undefined {
	const kept = waitingEntryOf(context)?.metadata?.[WAIT_RECORD_KEY];
	if (kept !== undefined) return decodeWaitRecord(kept);
	const customData = customDataOf(context);
	return decodeWaitRecord(customData?.get(WAIT_RECORD_KEY), customData?.get(CORRELATION_KEY));
}

/**
 * What this n8n's resume honours, which the node cannot probe directly (it is n8n-core's
 * `WorkflowExecute`): a stack entry's `metadata.forwardAllOutputs` (a disabled node passes every
 * output on, so a timeout leaves by Timed Out) and `metadata.resumeError` (the resumed node fails).
 * Both came to n8n-core with the node contexts' `customData` (n8n 2.x); n8n 1.123 has neither, so
 * that is the capability read here.
 */
function resumeCapabilities(context: IExecuteFunctions): {
	forwardsAllOutputs: boolean;
	failsResumedNode: boolean;
} {
	const modern =
		typeof (context as unknown as { customData?: { set?: unknown } }).customData?.set ===
		'function';
	return { forwardsAllOutputs: modern, failsResumedNode: modern };
}

/**
 * Runs `send` once n8n has saved this execution as waiting, so that a callback sent at once finds
 * the run waiting. n8n gives nodes no public hook for that moment (`onExecutionFinish` skips
 * waiting runs), so this uses the same lifecycle hooks it is built on: handlers added while the
 * node runs come after n8n's own, which save the execution (README, "What the node relies on").
 * Returns false when this n8n has no such hooks; the caller then sends at once.
 */
function afterWaitIsSaved(context: IExecuteFunctions, send: () => Promise<void>): boolean {
	type Hooks = {
		addHandler?: (
			name: 'workflowExecuteAfter',
			handler: (run: { status?: string; waitTill?: Date }) => Promise<void>,
		) => void;
	};
	const hooks = (context as unknown as { additionalData?: { hooks?: Hooks } }).additionalData
		?.hooks;
	if (typeof hooks?.addHandler !== 'function') return false;
	hooks.addHandler('workflowExecuteAfter', async (run) => {
		// A run that failed or was cancelled after this node is not waiting: nothing to ask for.
		if (run?.status !== 'waiting' || !run.waitTill) return;
		// Not awaited: the partner may answer slowly; n8n finishes the run's bookkeeping meanwhile.
		void send().catch((error: Error) =>
			context.logger.error(`Round-Trip Wait: sending the request failed: ${error.message}`),
		);
	});
	return true;
}

function readSettings(context: IExecuteFunctions): RawSettings {
	const raw: RawSettings = {};
	for (const name of SETTING_NAMES) {
		// Request fields are hidden, and not stored, in Wait Only mode: read as absent.
		raw[name] = context.getNodeParameter(name, 0, MISSING);
		if (raw[name] === MISSING) delete raw[name];
	}
	return raw;
}

/** The Response Body, checked before the wait began. */
function responseBodyOf(value: unknown): IDataObject {
	return (typeof value === 'string' ? JSON.parse(value) : value) as IDataObject;
}

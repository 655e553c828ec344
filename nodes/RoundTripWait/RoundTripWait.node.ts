import {
	type ICredentialDataDecryptedObject,
	type ICredentialsDecrypted,
	type ICredentialTestFunctions,
	type IDataObject,
	type IExecuteFunctions,
	type INode,
	type INodeCredentialTestResult,
	type INodeExecutionData,
	type INodeType,
	type INodeTypeDescription,
	type IWebhookFunctions,
	type IWebhookResponseData,
	NodeConnectionTypes,
	NodeOperationError,
} from 'n8n-workflow';

import {
	type CallbackAuth,
	compileCorrelationPath,
	DEFAULT_CORRELATION_PATH,
	judgeCallback,
	newCorrelationId,
	resumeDeadline,
	timedOutItem,
	type TimeoutUnit,
	validateCallbackAuth,
} from '../../core/roundtrip';
import { toNodeError } from '../shared/errors';
import { HTTP_CREDENTIAL, n8nHttpTransport } from '../shared/httpTransport';
import { timeUnitOptions } from '../shared/parameters';

const CALLBACK_CREDENTIAL = 'roundTripCallbackApi';
/** The waiting run's correlation id lives in the execution's custom data, where the resume webhook reads it (and users can filter executions by it). */
const CORRELATION_KEY = 'correlationId';
/** n8n's limit for a custom-data value. */
const MAX_CORRELATION_ID_LENGTH = 255;

export function callbackAuthFrom(credentials: ICredentialDataDecryptedObject): CallbackAuth {
	switch (credentials.scheme) {
		case 'header':
			return { scheme: 'header', token: String(credentials.token ?? ''), headerName: String(credentials.headerName ?? '') || undefined };
		case 'basic':
			return { scheme: 'basic', user: String(credentials.user ?? ''), password: String(credentials.password ?? '') };
		default:
			return {
				scheme: 'hmac',
				secret: String(credentials.secret ?? ''),
				signatureHeader: String(credentials.signatureHeader ?? '') || undefined,
				toleranceSec: credentials.toleranceSec === undefined ? undefined : Number(credentials.toleranceSec),
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
		subtitle: '={{$parameter["mode"] === "sendAndWait" ? "Send, then wait for callback" : "Wait for callback"}}',
		description: 'Pauses the run until the external system calls back with this run\'s correlation ID, authenticated',
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
		],
		webhooks: [
			{
				name: 'default',
				httpMethod: 'POST',
				responseMode: 'onReceived',
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
						description: 'This node sends the request (with the correlation ID and callback URL), then waits',
					},
					{
						name: 'Wait Only',
						value: 'waitOnly',
						description: 'An earlier node sent the request with {{ $execution.resumeUrl }} and the correlation ID; this node waits',
					},
				],
			},
			{
				displayName: 'Correlation ID',
				name: 'correlationId',
				type: 'string',
				default: '',
				placeholder: 'e.g. {{ $json.orderId }}',
				description: 'The ID the callback must carry. Leave empty for a fresh random ID. In "Wait Only" mode, use the ID the earlier node sent.',
			},
			{
				displayName: 'Authentication',
				name: 'authentication',
				type: 'options',
				default: 'none',
				displayOptions: { show: { mode: ['sendAndWait'] } },
				options: [
					{ name: 'None', value: 'none' },
					{ name: 'Durable Triggers HTTP API', value: 'durableHttpApi' },
				],
				description: 'Credential for the outbound request; with it, the URL may be relative to its base URL',
			},
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
				description: 'JSON body. The correlation ID and callback URL are added to it under the field names below, and always sent as X-Correlation-ID and X-Callback-URL headers.',
			},
			{
				displayName: 'Correlation ID Field',
				name: 'correlationIdField',
				type: 'string',
				default: 'correlationId',
				displayOptions: { show: { mode: ['sendAndWait'] } },
				description: 'Body field that carries the correlation ID; empty to leave the body as written',
			},
			{
				displayName: 'Callback URL Field',
				name: 'callbackUrlField',
				type: 'string',
				default: 'callbackUrl',
				displayOptions: { show: { mode: ['sendAndWait'] } },
				description: 'Body field that carries the URL to call back; empty to leave the body as written',
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
				description: 'JSONata over { body, headers, query } of the callback, e.g. body.correlationId, query.correlationId or headers."x-correlation-token"',
			},
			{
				displayName: 'Timeout',
				name: 'timeoutAmount',
				type: 'number',
				default: 1,
				typeOptions: { minValue: 1 },
				description: 'After this long without an accepted callback, the run continues on the "Timed Out" output',
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
			throw new NodeOperationError(this.getNode(), `Round-Trip Wait waits for one callback per execution, but received ${items.length} items`, {
				description: 'n8n resumes a waiting execution once. Start one execution per request, e.g. with the Poll Trigger\'s "One Run per Item" or an Execute Workflow node per item.',
			});
		}
		try {
			const correlationId = String(this.getNodeParameter('correlationId', 0) || newCorrelationId());
			if (correlationId.length > MAX_CORRELATION_ID_LENGTH) {
				throw new NodeOperationError(this.getNode(), `"Correlation ID" is ${correlationId.length} characters long; at most ${MAX_CORRELATION_ID_LENGTH} are supported`);
			}
			compileCorrelationPath(this.getNodeParameter('correlationIdPath', 0) as string);
			validateCallbackAuth(callbackAuthFrom(await this.getCredentials(CALLBACK_CREDENTIAL)));
			const waitStartedAt = Date.now();
			const deadline = resumeDeadline(waitStartedAt, {
				amount: this.getNodeParameter('timeoutAmount', 0) as number,
				unit: this.getNodeParameter('timeoutUnit', 0) as TimeoutUnit,
			});
			const callbackUrl = this.evaluateExpression('{{ $execution.resumeUrl }}', 0) as string;
			const sent = this.getNodeParameter('mode', 0) === 'sendAndWait' ? await sendRequest(this, correlationId, callbackUrl) : undefined;

			this.customData.set(CORRELATION_KEY, correlationId);
			// n8n runs no node code when a wait times out: it passes the waiting node's stored input on.
			// Storing the "Timed Out" item as that input, on output 1, makes the timeout land there.
			const executeData = this.getExecuteData();
			executeData.data = { main: [[], [{ json: { ...timedOutItem(correlationId, waitStartedAt, deadline, deadline) }, pairedItem: { item: 0 } }]] };
			executeData.metadata = { ...executeData.metadata, forwardAllOutputs: true };
			await this.putExecutionToWait(new Date(deadline));
			const waiting: IDataObject = {
				waiting: true,
				correlationId,
				callbackUrl,
				callbackMethod: 'POST',
				deadline: new Date(deadline).toISOString(),
				correlationIdLocation: this.getNodeParameter('correlationIdPath', 0) as string,
			};
			if (sent) waiting.request = sent;
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
		try {
			const expected = this.customData.get(CORRELATION_KEY);
			if (!expected) {
				response.status(409).json({ error: 'this execution is not waiting in a Round-Trip Wait node', waiting: false });
				return { noWebhookResponse: true };
			}
			if (request.rawBody === undefined && request.readRawBody) await request.readRawBody();
			const query = { ...(request.query as IDataObject) };
			delete query.signature; // n8n's resume token: a secret of this run, not callback data
			const judgement = await judgeCallback(
				{
					auth: callbackAuthFrom(await this.getCredentials(CALLBACK_CREDENTIAL)),
					correlationPath: compileCorrelationPath(this.getNodeParameter('correlationIdPath') as string),
					expectedCorrelationId: expected,
				},
				{ headers: request.headers, rawBody: request.rawBody ?? '', body: request.body, query },
				Date.now(),
			);
			if (!judgement.ok) {
				response.status(judgement.status).json({ error: judgement.reason, waiting: true });
				return { noWebhookResponse: true };
			}
			response.status(this.getNodeParameter('responseCode') as number).json(parseJsonParameter(this.getNode(), this.getNodeParameter('responseBody'), 'Response Body'));
			return { noWebhookResponse: true, workflowData: [[{ json: judgement.receipt as unknown as IDataObject }], []] };
		} catch (error) {
			response.status(500).json({ error: `The callback could not be checked: ${error.message}`, waiting: true });
			return { noWebhookResponse: true };
		}
	}
}

async function sendRequest(context: IExecuteFunctions, correlationId: string, callbackUrl: string): Promise<IDataObject> {
	const body = parseJsonParameter(context.getNode(), context.getNodeParameter('body', 0), 'Body');
	const correlationIdField = context.getNodeParameter('correlationIdField', 0) as string;
	const callbackUrlField = context.getNodeParameter('callbackUrlField', 0) as string;
	if (correlationIdField) body[correlationIdField] = correlationId;
	if (callbackUrlField) body[callbackUrlField] = callbackUrl;
	const method = context.getNodeParameter('method', 0) as string;
	const url = context.getNodeParameter('url', 0) as string;
	const http = n8nHttpTransport(context, context.getNodeParameter('authentication', 0) === 'durableHttpApi');
	const response = await http({
		method,
		url,
		headers: {
			...(parseJsonParameter(context.getNode(), context.getNodeParameter('headers', 0), 'Headers') as Record<string, string>),
			'x-correlation-id': correlationId,
			'x-callback-url': callbackUrl,
		},
		body: method === 'GET' ? undefined : body,
	});
	if (response.status < 200 || response.status >= 300) {
		throw new NodeOperationError(context.getNode(), `${method} ${url} answered HTTP ${response.status}; the request was not accepted, so the run does not wait`, {
			description: response.body.slice(0, 500),
		});
	}
	let responseBody: unknown = response.body;
	try {
		responseBody = JSON.parse(response.body);
	} catch {
		// a non-JSON acknowledgement is kept as text
	}
	return { method, url, status: response.status, body: responseBody as IDataObject };
}

function parseJsonParameter(node: INode, value: unknown, field: string): IDataObject {
	if (value === undefined || value === '') return {};
	if (typeof value === 'object' && value !== null && !Array.isArray(value)) return { ...(value as IDataObject) };
	try {
		const parsed = JSON.parse(String(value));
		if (typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed)) return parsed;
	} catch {
		// reported below
	}
	throw new NodeOperationError(node, `"${field}" must be a JSON object; got ${String(value).slice(0, 100)}`);
}

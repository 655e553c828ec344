import type { INodeProperties } from 'n8n-workflow';

import { DEFAULT_CORRELATION_PATH } from '../../core/roundtrip';
import { httpAuthProperties, timeUnitOptions } from '../shared/parameters';

/** The Round-Trip Wait's parameters, as the editor shows them. */
export const roundTripWaitProperties: INodeProperties[] = [
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
		displayName: 'Callback URL',
		name: 'callbackVia',
		type: 'options',
		noDataExpression: true,
		default: 'perWait',
		options: [
			{
				name: 'Per Wait',
				value: 'perWait',
				description: "The partner calls back this run's own callback URL, sent with the request",
			},
			{
				name: 'Fixed (Round-Trip Callback Node)',
				value: 'fixed',
				description:
					"The partner calls one URL registered once: a Round-Trip Callback node's, with the same credential, which finds this run by the correlation ID",
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
		description:
			'JSONata over { body, headers, query } of the callback, e.g. body.correlationId, query.correlationId or headers."x-correlation-token". In "Wait Only" mode with an HMAC signature only the signed body is read: the signature covers no header or query.',
	},
	{
		displayName: 'Resume Condition',
		name: 'resumeCondition',
		type: 'string',
		default: '',
		placeholder: 'e.g. body.status in ["signed", "declined"]',
		description:
			'JSONata over { body, headers, query } of the callback: only a callback for which it is true resumes the run; others (status events the run does not wait for) are answered 202 and the run keeps waiting. Empty: every authenticated callback with the right ID resumes.',
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
];

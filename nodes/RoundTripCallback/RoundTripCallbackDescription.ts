import type { INodeProperties } from 'n8n-workflow';

import { DEFAULT_CORRELATION_PATH, DEFAULT_KEPT_PER_CREDENTIAL } from '../../core/roundtrip';

/** The Round-Trip Callback's parameters (apart from the node, so that messages can say their labels). */
export const roundTripCallbackProperties: INodeProperties[] = [
	{
		displayName:
			'Publish this workflow and register its production URL at the partner once. Each callback resumes the Round-Trip Wait (Callback URL: Fixed, same credential) waiting for its correlation ID; this node starts no run itself.',
		name: 'notice',
		type: 'notice',
		default: '',
	},
	{
		displayName: 'Path',
		name: 'path',
		type: 'string',
		default: 'round-trip/partner',
		required: true,
		description: 'The URL path the partner calls: WEBHOOK_URL/webhook/ and this path',
	},
	{
		displayName: 'Correlation ID Location',
		name: 'correlationIdPath',
		type: 'string',
		default: DEFAULT_CORRELATION_PATH,
		description:
			'JSONata over { body, headers, query } of the callback: where the partner puts its ID for the request. With an HMAC signature only the signed body is read.',
	},
	{
		displayName: 'Kept Callbacks at Most',
		name: 'keptAtMost',
		type: 'number',
		typeOptions: { minValue: 1, maxValue: 100000, numberPrecision: 0 },
		default: DEFAULT_KEPT_PER_CREDENTIAL,
		description:
			'How many callbacks that came before their run waits are kept at once for this credential (10 minutes each); beyond it the partner is answered 503 with Retry-After',
	},
];

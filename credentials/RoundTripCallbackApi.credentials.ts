import type { ICredentialType, INodeProperties } from 'n8n-workflow';

/**
 * Inbound credential: how the external system proves a callback to the Round-Trip Wait node is its own.
 * Nothing is called with it, so its test (the node's `roundTripCallbackAuthTest`) checks that the
 * settings can authenticate a callback at all.
 */
export class RoundTripCallbackApi implements ICredentialType {
	name = 'roundTripCallbackApi';

	displayName = 'Round-Trip Callback API';

	icon = {
		light: 'file:roundTripCallbackApi.svg',
		dark: 'file:roundTripCallbackApi.dark.svg',
	} as const;

	documentationUrl =
		'https://github.com/n8n-nodes-durable-triggers/n8n-nodes-durable-triggers/blob/main/docs/round-trip-wait.md#callback-contract';

	properties: INodeProperties[] = [
		{
			displayName: 'Scheme',
			name: 'scheme',
			type: 'options',
			default: 'hmac',
			options: [
				{
					name: 'HMAC-SHA256 Signature',
					value: 'hmac',
					description:
						'Header "t=<unix seconds>,v2=<hex HMAC-SHA256 of "<t>.<rtw of the callback URL>.<raw body>">"; stale and replayed callbacks are refused',
				},
				{
					name: 'Standard Webhooks',
					value: 'standardWebhooks',
					description:
						'Headers webhook-ID, webhook-timestamp and webhook-signature ("v1,<base64 HMAC-SHA256 of "<id>.<t>.<body>">"), secret whsec_…',
				},
				{ name: 'Shared Header Token', value: 'header', description: 'A secret token in a header' },
				{ name: 'Basic Auth', value: 'basic', description: 'HTTP Basic user and password' },
			],
		},
		{
			displayName: 'Secret',
			name: 'secret',
			type: 'string',
			typeOptions: { password: true },
			default: '',
			description:
				'Shared secret the external system signs callbacks with (Standard Webhooks: whsec_ followed by base64)',
			displayOptions: { show: { scheme: ['hmac', 'standardWebhooks'] } },
		},
		{
			displayName: 'Signature Header',
			name: 'signatureHeader',
			type: 'string',
			default: 'x-signature',
			displayOptions: { show: { scheme: ['hmac'] } },
		},
		{
			displayName: 'Tolerance (Seconds)',
			name: 'toleranceSec',
			type: 'number',
			default: 300,
			typeOptions: { minValue: 1, maxValue: 86400 },
			description:
				'A callback whose timestamp is further than this from now is refused as a replay',
			displayOptions: { show: { scheme: ['hmac', 'standardWebhooks'] } },
		},
		{
			displayName: 'Token Header',
			name: 'headerName',
			type: 'string',
			default: 'x-callback-token',
			displayOptions: { show: { scheme: ['header'] } },
		},
		{
			displayName: 'Token',
			name: 'token',
			type: 'string',
			typeOptions: { password: true },
			default: '',
			displayOptions: { show: { scheme: ['header'] } },
		},
		{
			displayName: 'User',
			name: 'user',
			type: 'string',
			default: '',
			displayOptions: { show: { scheme: ['basic'] } },
		},
		{
			displayName: 'Password',
			name: 'password',
			type: 'string',
			typeOptions: { password: true },
			default: '',
			displayOptions: { show: { scheme: ['basic'] } },
		},
	];
}

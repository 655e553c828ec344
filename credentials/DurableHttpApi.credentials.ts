import type {
	IAuthenticate,
	ICredentialDataDecryptedObject,
	ICredentialTestRequest,
	ICredentialType,
	IHttpRequestOptions,
	INodeProperties,
} from 'n8n-workflow';

type HttpAuthentication = 'none' | 'bearer' | 'header' | 'basic' | 'query';

/** Adds the chosen authentication to a request. Exported for its unit test. */
export async function authenticateHttpRequest(
	credentials: ICredentialDataDecryptedObject,
	request: IHttpRequestOptions,
): Promise<IHttpRequestOptions> {
	const authentication = (credentials.authentication ?? 'none') as HttpAuthentication;
	const headers = { ...(request.headers ?? {}) };
	const qs = { ...(request.qs ?? {}) };
	const authenticated: IHttpRequestOptions = { ...request, headers, qs };
	switch (authentication) {
		case 'bearer':
			headers.Authorization = `Bearer ${String(credentials.token)}`;
			break;
		case 'header':
			headers[String(credentials.headerName)] = String(credentials.headerToken);
			break;
		case 'basic':
			authenticated.auth = {
				username: String(credentials.user),
				password: String(credentials.password),
			};
			break;
		case 'query':
			qs[String(credentials.queryName)] = String(credentials.queryToken);
			break;
		case 'none':
			break;
	}
	return authenticated;
}

export class DurableHttpApi implements ICredentialType {
	name = 'durableHttpApi';

	displayName = 'Durable Triggers HTTP API';

	icon = { light: 'file:durableHttpApi.svg', dark: 'file:durableHttpApi.dark.svg' } as const;

	documentationUrl =
		'https://github.com/n8n-nodes-durable-triggers/n8n-nodes-durable-triggers/blob/main/docs/credentials.md';

	properties: INodeProperties[] = [
		{
			displayName: 'Base URL',
			name: 'baseUrl',
			type: 'string',
			default: '',
			placeholder: 'https://inventory.example.com/api',
			description: 'Relative URLs in the op\'s "with.url" are resolved against this',
			required: true,
		},
		{
			displayName: 'Authentication',
			name: 'authentication',
			type: 'options',
			default: 'none',
			options: [
				{ name: 'None', value: 'none' },
				{
					name: 'Bearer Token',
					value: 'bearer',
					description: 'Authorization: Bearer &lt;token&gt;',
				},
				{ name: 'Header', value: 'header', description: 'A header of your choice, e.g. X-API-Key' },
				{ name: 'Basic Auth', value: 'basic' },
				{ name: 'Query Parameter', value: 'query', description: 'e.g. ?api_key=...' },
			],
		},
		{
			displayName: 'Token',
			name: 'token',
			type: 'string',
			typeOptions: { password: true },
			default: '',
			displayOptions: { show: { authentication: ['bearer'] } },
		},
		{
			displayName: 'Header Name',
			name: 'headerName',
			type: 'string',
			default: 'X-API-Key',
			displayOptions: { show: { authentication: ['header'] } },
		},
		{
			displayName: 'Header Token',
			name: 'headerToken',
			type: 'string',
			typeOptions: { password: true },
			default: '',
			displayOptions: { show: { authentication: ['header'] } },
		},
		{
			displayName: 'User',
			name: 'user',
			type: 'string',
			default: '',
			displayOptions: { show: { authentication: ['basic'] } },
		},
		{
			displayName: 'Password',
			name: 'password',
			type: 'string',
			typeOptions: { password: true },
			default: '',
			displayOptions: { show: { authentication: ['basic'] } },
		},
		{
			displayName: 'Query Parameter Name',
			name: 'queryName',
			type: 'string',
			default: 'api_key',
			displayOptions: { show: { authentication: ['query'] } },
		},
		{
			displayName: 'Query Parameter Token',
			name: 'queryToken',
			type: 'string',
			typeOptions: { password: true },
			default: '',
			displayOptions: { show: { authentication: ['query'] } },
		},
		{
			displayName: 'Test Path',
			name: 'testPath',
			type: 'string',
			default: '/',
			description:
				'Path (relative to the base URL) that the credential test requests; it must answer 2xx with these credentials',
		},
	];

	authenticate: IAuthenticate = authenticateHttpRequest;

	test: ICredentialTestRequest = {
		request: {
			baseURL: '={{$credentials.baseUrl}}',
			url: '={{$credentials.testPath}}',
		},
	};
}

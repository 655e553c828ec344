import type { IDataObject, INodeProperties } from 'n8n-workflow';

import { ConfigError } from '../../core/configError';
import {
	type PageParameter,
	Pagination,
	type PagingEnd,
	type PagingMode,
	type PaginationSettings,
} from '../../core/connectors/pagination';
import type { ListOrder, PagingSettings } from '../../core/poll';

const HTTP_OPS = { op: ['http.request'] };

/**
 * The Poll Trigger's "Pagination" for `http.request`: the options of n8n's HTTP Request node
 * (same names and values, mapped to the core's own by readPagingSettings), plus a Link header mode and what paging needs to stop at known ground.
 * Its expressions are JSONata over `{ response: { body, headers, statusCode }, pageCount, cursor }`
 * (docs/pagination.md): a poll has no run data for n8n expressions.
 */
export const paginationProperties: INodeProperties[] = [
	{
		displayName: 'Pagination',
		name: 'pagination',
		placeholder: 'Add pagination',
		type: 'fixedCollection',
		default: {},
		displayOptions: { show: HTTP_OPS },
		description:
			'Fetch several pages in one poll. Expressions here are JSONata over response (body, headers, statusCode), pageCount (pages received so far) and cursor.',
		options: [
			{
				displayName: 'Pagination',
				name: 'pagination',
				// In the order of n8n's HTTP Request node's Pagination (mode first), not alphabetical.
				// eslint-disable-next-line n8n-nodes-base/node-param-fixed-collection-type-unsorted-items
				values: [
					{
						displayName: 'Pagination Mode',
						name: 'paginationMode',
						type: 'options',
						default: 'off',
						options: [
							{ name: 'Off', value: 'off' },
							{
								name: 'Update a Parameter in Each Request',
								value: 'updateAParameterInEachRequest',
								description: 'A page number, an offset or a cursor token from the last response',
							},
							{
								name: 'Response Contains Next URL',
								value: 'responseContainsNextURL',
								description: 'The next URL is in the body or a header of the response',
							},
							{
								name: 'Link Header (Rel="next")',
								value: 'linkHeader',
								description:
									'The next URL is the Link header\'s rel="next" (GitHub and many others)',
							},
						],
					},
					{
						displayName: 'Next URL',
						name: 'nextURL',
						type: 'string',
						default: '',
						placeholder: 'e.g. response.body.next',
						displayOptions: { show: { paginationMode: ['responseContainsNextURL'] } },
						description:
							"JSONata giving the next page's URL from the last response; empty or missing: no more pages",
					},
					{
						displayName: 'Parameters',
						name: 'parameters',
						type: 'fixedCollection',
						typeOptions: { multipleValues: true },
						default: { parameters: [] },
						displayOptions: { show: { paginationMode: ['updateAParameterInEachRequest'] } },
						options: [
							{
								displayName: 'Parameter',
								name: 'parameters',
								values: [
									{
										displayName: 'Type',
										name: 'type',
										type: 'options',
										default: 'qs',
										options: [
											{ name: 'Body', value: 'body' },
											{ name: 'Header', value: 'headers' },
											{ name: 'Query', value: 'qs' },
										],
									},
									{
										displayName: 'Name',
										name: 'name',
										type: 'string',
										default: '',
										placeholder: 'e.g. page',
									},
									{
										displayName: 'Value',
										name: 'value',
										type: 'string',
										default: '',
										placeholder: 'e.g. pageCount + 1',
										description:
											'JSONata for the next request, e.g. pageCount + 1, or response.body.next_cursor. The first request is With as written.',
									},
								],
							},
						],
					},
					{
						displayName: 'Pagination Complete When',
						name: 'paginationCompleteWhen',
						type: 'options',
						default: 'responseIsEmpty',
						displayOptions: { hide: { paginationMode: ['off'] } },
						options: [
							{
								name: 'Response Is Empty',
								value: 'responseIsEmpty',
								description: 'The page lists no items',
							},
							{ name: 'Receive Specific Status Codes', value: 'receiveSpecificStatusCodes' },
							{ name: 'Other', value: 'other' },
						],
						description: 'Besides this, paging ends when there is no next URL (or Link rel="next")',
					},
					{
						displayName: 'Status Code(s) when Complete',
						name: 'statusCodesWhenComplete',
						type: 'string',
						default: '',
						placeholder: 'e.g. 404',
						displayOptions: { show: { paginationCompleteWhen: ['receiveSpecificStatusCodes'] } },
						description: 'Comma-separated',
					},
					{
						displayName: 'Complete Expression',
						name: 'completeExpression',
						type: 'string',
						default: '',
						placeholder: 'e.g. response.body.has_more = false',
						displayOptions: { show: { paginationCompleteWhen: ['other'] } },
						description: 'JSONata; true when the last page was the last',
					},
					{
						displayName: 'Limit Pages Fetched',
						name: 'limitPagesFetched',
						type: 'boolean',
						default: true,
						displayOptions: { hide: { paginationMode: ['off'] } },
						description: 'Whether to stop after Max Pages pages in one poll',
					},
					{
						displayName: 'Max Pages',
						name: 'maxRequests',
						type: 'number',
						default: 20,
						typeOptions: { minValue: 1 },
						displayOptions: {
							show: { limitPagesFetched: [true] },
							hide: { paginationMode: ['off'] },
						},
						description:
							'Pages per poll at most. When all of them are new a failed execution says items beyond may not have been started.',
					},
					{
						displayName: 'Interval Between Requests (Ms)',
						name: 'requestInterval',
						type: 'number',
						default: 0,
						typeOptions: { minValue: 0 },
						displayOptions: { hide: { paginationMode: ['off'] } },
					},
					{
						displayName: 'Send Credentials to Hosts',
						name: 'sendCredentialsToHosts',
						type: 'string',
						default: '',
						placeholder: 'e.g. api2.example.com, *.example.com',
						displayOptions: { hide: { paginationMode: ['off'] } },
						description:
							"Hosts besides the first request's origin whose pages get the credential and the request's headers, comma-separated. Empty: a next page on another origin (scheme, host or port) is fetched without them; an http page after an https one is refused.",
					},
					{
						displayName: 'Source Lists',
						name: 'listOrder',
						type: 'options',
						default: 'newestFirst',
						displayOptions: { hide: { paginationMode: ['off'] } },
						options: [
							{
								name: 'Newest First',
								value: 'newestFirst',
								description: 'Paging stops at the first page that reaches items already remembered',
							},
							{
								name: 'Oldest First',
								value: 'oldestFirst',
								description:
									'Every page is read; put {{ $cursor }} in the request so each poll starts after the last item',
							},
						],
					},
					{
						displayName: 'Stop at Known Ground',
						name: 'stopAtKnownGround',
						type: 'boolean',
						default: true,
						displayOptions: {
							show: { listOrder: ['newestFirst'] },
							hide: { paginationMode: ['off'] },
						},
						description:
							'Whether paging stops at the first page with an item already remembered (or at or below the high-water mark); off: every page is read at every poll',
					},
					{
						displayName: 'Cursor Before the First Start',
						name: 'firstCursor',
						type: 'string',
						default: '',
						placeholder: 'e.g. 0 or 2026-01-01T00:00:00Z',
						description:
							'The value of {{ $cursor }} in With until Dedupe Greatest has a high-water mark',
					},
				],
			},
		],
	},
];

/** The Pagination Mode options, as core/connectors/pagination.ts names the modes. */
const MODES = {
	off: 'off',
	updateAParameterInEachRequest: 'parameter',
	responseContainsNextURL: 'nextUrl',
	linkHeader: 'linkHeader',
} as const satisfies Record<string, PagingMode>;

/** The Pagination Complete When options, as the core names them. */
const ENDS = {
	responseIsEmpty: 'emptyPage',
	receiveSpecificStatusCodes: 'statusCodes',
	other: 'expression',
} as const satisfies Record<string, PagingEnd>;

/** A parameter's Type options (n8n's HTTP Request node's names), as the core names where it goes. */
const PLACES = { qs: 'query', body: 'body', headers: 'headers' } as const satisfies Record<
	string,
	PageParameter['in']
>;

/**
 * The core's paging settings as its ConfigErrors name them (`pagination.nextUrl`, core/connectors/
 * pagination.ts), by the option of n8n's HTTP Request node each is read from: the label a message says.
 */
export const PAGING_OPTIONS = {
	'pagination.mode': 'paginationMode',
	'pagination.nextUrl': 'nextURL',
	'pagination.parameters': 'parameters',
	'pagination.endWhen': 'paginationCompleteWhen',
	'pagination.endStatuses': 'statusCodesWhenComplete',
	'pagination.endExpression': 'completeExpression',
	'pagination.maxPages': 'maxRequests',
	'pagination.pauseMs': 'requestInterval',
	'pagination.credentialHosts': 'sendCredentialsToHosts',
} as const satisfies Record<`pagination.${Exclude<keyof PaginationSettings, 'identity'>}`, string>;

/** One of `choices`' keys, or a ConfigError listing them for the setting `field` (`pagination.mode`). */
function choice<T extends Record<string, string>>(
	choices: T,
	value: unknown,
	field: string,
	problem: string,
): T[keyof T] {
	if (typeof value === 'string' && Object.prototype.hasOwnProperty.call(choices, value))
		return choices[value] as T[keyof T];
	throw new ConfigError(field, value, problem);
}

/**
 * Reads "Pagination" (http.request only) into the core's paging settings, mapping n8n's HTTP Request
 * node's option names and values to the core's; a setting that can never work is a ConfigError.
 */
export function readPagingSettings(
	getNodeParameter: (name: string, fallback: unknown) => unknown,
): PagingSettings {
	const values = (getNodeParameter('pagination.pagination', {}) ?? {}) as IDataObject;
	const parameters = ((values.parameters as IDataObject | undefined)?.parameters ??
		[]) as unknown as Array<{ type: string; name: string; value: string }>;
	// The options as set, for the core to tell changed settings from the same (stored with a poll to
	// go on from, so it stays the text it was).
	const given = {
		mode: values.paginationMode ?? 'off',
		nextURL: values.nextURL as string | undefined,
		parameters,
		paginationCompleteWhen: values.paginationCompleteWhen as string | undefined,
		statusCodesWhenComplete: values.statusCodesWhenComplete as string | undefined,
		completeExpression: values.completeExpression as string | undefined,
		limitPagesFetched: values.limitPagesFetched as boolean | undefined,
		maxRequests: values.maxRequests as number | undefined,
		requestInterval: values.requestInterval as number | undefined,
	};
	const mode = choice(
		MODES,
		given.mode,
		'pagination.mode',
		`must be one of ${Object.keys(MODES).join(', ')}`,
	);
	const settings: PaginationSettings = {
		mode,
		nextUrl: given.nextURL,
		parameters:
			mode === 'parameter'
				? parameters.map((parameter) => ({
						in: choice(
							PLACES,
							parameter.type,
							'pagination.parameters',
							'type must be qs, body or headers',
						),
						name: parameter.name,
						value: parameter.value,
					}))
				: [],
		endWhen:
			given.paginationCompleteWhen === undefined
				? undefined
				: choice(
						ENDS,
						given.paginationCompleteWhen,
						'pagination.endWhen',
						'must be responseIsEmpty, receiveSpecificStatusCodes or other',
					),
		endStatuses: given.statusCodesWhenComplete,
		endExpression: given.completeExpression,
		maxPages: given.limitPagesFetched === false ? null : given.maxRequests,
		pauseMs: given.requestInterval,
		// Not in the identity: where the credential goes does not move a poll's place in the list.
		credentialHosts: values.sendCredentialsToHosts as string | undefined,
		identity: JSON.stringify(given),
	};
	return {
		pagination: new Pagination(settings),
		listOrder: (values.listOrder ?? 'newestFirst') as ListOrder,
		stopAtKnownGround: values.stopAtKnownGround !== false,
		firstCursor: String(values.firstCursor ?? ''),
	};
}

import { readPagingSettings } from './pagination';

/** readPagingSettings over the "Pagination" options as n8n hands them over. */
const read = (values: Record<string, unknown>) =>
	readPagingSettings((name, fallback) => (name === 'pagination.pagination' ? values : fallback));

describe('readPagingSettings', () => {
	it("maps the HTTP Request node's option names and values to the core's", () => {
		expect(read({}).pagination).toMatchObject({ mode: 'off', enabled: false, maxPages: 20 });
		expect(
			read({ paginationMode: 'responseContainsNextURL', nextURL: 'response.body.next' }).pagination,
		).toMatchObject({ mode: 'nextUrl', resumable: true });
		const numbered = read({
			paginationMode: 'updateAParameterInEachRequest',
			parameters: { parameters: [{ type: 'qs', name: 'page', value: 'pageCount + 1' }] },
			maxRequests: 3,
		}).pagination;
		expect(numbered).toMatchObject({ mode: 'parameter', maxPages: 3, resumable: false });
		expect(
			read({ paginationMode: 'linkHeader', limitPagesFetched: false }).pagination.maxPages,
		).toBeUndefined();
	});

	it('keeps the options as set as the identity a poll to go on from is stored under', () => {
		const values = { paginationMode: 'linkHeader', maxRequests: 5 };
		expect(read(values).pagination.identity).toBe(
			JSON.stringify({ mode: 'linkHeader', parameters: [], maxRequests: 5 }),
		);
	});

	it('refuses an unknown option value with the option names the editor offers', () => {
		expect(() => read({ paginationMode: 'pages' })).toThrow(
			'Invalid value "pages" for "«pagination.mode»": must be one of off, updateAParameterInEachRequest, responseContainsNextURL, linkHeader',
		);
		expect(() =>
			read({
				paginationMode: 'updateAParameterInEachRequest',
				parameters: { parameters: [{ type: 'path', name: 'page', value: '1' }] },
			}),
		).toThrow(
			'Invalid value "path" for "«pagination.parameters»": type must be qs, body or headers',
		);
		expect(() => read({ paginationMode: 'linkHeader', paginationCompleteWhen: 'never' })).toThrow(
			'for "«pagination.endWhen»": must be responseIsEmpty, receiveSpecificStatusCodes or other',
		);
	});
});

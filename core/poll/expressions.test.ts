import jsonata from 'jsonata';

import { ConfigError } from '../configError';
import { PollItemError } from './errors';
import { canonicalJson, contentHash, PollExpressions } from './expressions';

/** Counts JSONata evaluations, to show which expressions take the direct read (core/poll/expressions.ts). */
let evaluations = 0;
jest.mock('jsonata', () => {
	// jsonata's CommonJS export is the function itself.
	const actual = jest.requireActual<typeof jsonata>('jsonata');
	const counting = (source: string) => {
		const expression = actual(source);
		const evaluate = expression.evaluate.bind(expression);
		expression.evaluate = ((input: unknown, bindings?: Record<string, unknown>) => {
			evaluations++;
			return evaluate(input, bindings);
		}) as typeof expression.evaluate;
		return expression;
	};
	return { __esModule: true, default: counting };
});

describe('PollExpressions compile', () => {
	it('names the field, the expression and the position of a syntax error', () => {
		expect.assertions(4);
		try {
			new PollExpressions({ id: 'id +' });
		} catch (error) {
			expect(error).toBeInstanceOf(ConfigError);
			expect(error.field).toBe('id');
			expect(error.message).toContain('Invalid value "id +" for "«id»": not valid JSONata: ');
			expect(error.message).toMatch(/Unexpected end of expression at position 4$/);
		}
	});

	it('checks items and version too', () => {
		expect(() => new PollExpressions({ id: 'id', items: 'data[' })).toThrow(
			/^Invalid value "data\[" for "«items»": not valid JSONata: /,
		);
		expect(() => new PollExpressions({ id: 'id', version: 'updated_at(' })).toThrow(
			expect.objectContaining({ field: 'version' }),
		);
	});

	it('requires id', () => {
		expect(() => new PollExpressions({ id: '  ' })).toThrow(
			expect.objectContaining({
				field: 'id',
				message:
					'Invalid value "  " for "«id»": set it to the expression that gives one item\'s key, for example "id"',
			}),
		);
	});
});

describe('selectItems', () => {
	it('reads the result as the list when items is unset', async () => {
		const expressions = new PollExpressions({ id: 'id' });
		await expect(expressions.selectItems([{ id: 1 }])).resolves.toEqual([{ id: 1 }]);
	});

	it('refuses a non-list result without items, naming its type', async () => {
		const expressions = new PollExpressions({ id: 'id' });
		await expect(expressions.selectItems({ data: [], meta: {} })).rejects.toThrow(
			'Invalid value "" for "«items»": the op returned an object (fields: data, meta), not a list; set "«items»" to select the list in it (for example "data" or "results")',
		);
		await expect(expressions.selectItems('text')).rejects.toThrow(
			'the op returned a string, not a list',
		);
		await expect(expressions.selectItems(undefined)).rejects.toThrow(
			expect.objectContaining({ field: 'items' }),
		);
	});

	it('with items: nothing is an empty list, a lone value a one-item list, a list a list', async () => {
		const expressions = new PollExpressions({ id: 'id', items: 'data[status="open"]' });
		await expect(expressions.selectItems({ data: [] })).resolves.toEqual([]);
		await expect(expressions.selectItems({ data: [{ id: 2 }] })).resolves.toEqual([]);
		await expect(
			expressions.selectItems({ data: [{ id: 1, status: 'open' }, { id: 2 }] }),
		).resolves.toEqual([{ id: 1, status: 'open' }]);
		await expect(
			expressions.selectItems({
				data: [
					{ id: 1, status: 'open' },
					{ id: 2, status: 'open' },
				],
			}),
		).resolves.toHaveLength(2);
	});

	it('a path that does not exist is an error naming the path and the fields that are there; an empty list is not', async () => {
		const expressions = new PollExpressions({ id: 'id', items: 'data.tickets' });
		await expect(expressions.selectItems({ data: { tickets: [] } })).resolves.toEqual([]);
		await expect(
			expressions.selectItems({ data: { tikets: [{ id: 1 }], total: 1 } }),
		).rejects.toThrow(
			'Invalid value "data.tickets" for "«items»": it names the field "tickets", which "data" does not have; its fields are: tikets, total',
		);
		await expect(expressions.selectItems({ results: [] })).rejects.toThrow(
			`names the field "data", which the op's result does not have; its fields are: results`,
		);
		await expect(
			new PollExpressions({ id: 'id', items: 'data[status="open"]' }).selectItems({}),
		).rejects.toThrow(expect.objectContaining({ field: 'items' }));
		// Through lists of objects: a field any of them has exists.
		await expect(
			new PollExpressions({ id: 'id', items: 'pages.items' }).selectItems({
				pages: [{ items: [] }, { next: 2 }],
			}),
		).resolves.toEqual([]);
	});

	it('names the items expression when it fails at run time', async () => {
		const expressions = new PollExpressions({ id: 'id', items: '$number(data)' });
		await expect(expressions.selectItems({ data: 'abc' })).rejects.toThrow(
			/^Invalid value "\$number\(data\)" for "«items»": the expression failed: /,
		);
	});
});

describe('keyOf', () => {
	const expressions = new PollExpressions({ id: 'id' });

	it('accepts non-empty strings and finite numbers', async () => {
		await expect(expressions.keyOf({ id: 'a' }, 0)).resolves.toBe('a');
		await expect(expressions.keyOf({ id: 0 }, 0)).resolves.toBe(0);
	});

	it.each([[undefined], [''], [null], [Number.NaN], [true], [{ a: 1 }], [[1, 2]]])(
		'refuses %p, naming the item',
		async (id) => {
			const error = await expressions.keyOf({ id }, 3).catch((e: unknown) => e);
			expect(error).toBeInstanceOf(PollItemError);
			expect((error as PollItemError).index).toBe(3);
			expect((error as Error).message).toMatch(
				/^Item 3: "«id»" must give a non-empty string or a finite number; it gave /,
			);
		},
	);

	it('shows a long offending value cut short', async () => {
		const error = (await expressions
			.keyOf({ id: { text: 'x'.repeat(500) } }, 0)
			.catch((e: unknown) => e)) as Error;
		expect(error.message.length).toBeLessThan(200);
		expect(error.message).toContain('…');
	});

	it('names the item when the id expression fails at run time', async () => {
		const failing = new PollExpressions({ id: '$number(id)' });
		await expect(failing.keyOf({ id: 'abc' }, 7)).rejects.toThrow(
			/^Item 7: "«id»" \(\$number\(id\)\) failed/,
		);
	});
});

describe('the plain-path fast path reads what JSONata would', () => {
	const paths = ['id', 'meta.id', '`first name`', 'constructor', 'a.b.c'];
	const inputs: unknown[] = [
		{ id: 5, meta: { id: 'm' }, 'first name': 'Ann', a: { b: { c: 1 } } },
		{ id: null, meta: null, a: { b: 'text' } },
		{ meta: [{ id: 1 }, { id: 2 }], a: [{ b: { c: 1 } }, { b: { c: 2 } }] },
		{ id: [5], meta: { id: { deep: true } } },
		{},
		'text',
		42,
		null,
		[{ id: 1 }, { id: 2 }],
	];

	it.each(paths)('%s', async (path) => {
		const jsonata = (await import('jsonata')).default(path);
		const expressions = new PollExpressions({ id: 'id', version: path });
		for (const input of inputs) {
			const viaJsonata = await jsonata.evaluate(input);
			if (viaJsonata === undefined) {
				await expect(expressions.versionOf(input, 0)).rejects.toThrow('"«version»" gave no value');
			} else {
				await expect(expressions.versionOf(input, 0)).resolves.toBe(
					`v:${canonicalJson(viaJsonata)}`,
				);
			}
		}
	});
});

describe('versionOf', () => {
	it('is the version expression when set', async () => {
		const expressions = new PollExpressions({ id: 'id', version: 'updated' });
		await expect(expressions.versionOf({ id: 1, updated: '2026-01-01' }, 0)).resolves.toBe(
			'v:"2026-01-01"',
		);
	});

	it('is a content hash that ignores key order otherwise', async () => {
		const expressions = new PollExpressions({ id: 'id' });
		const a = await expressions.versionOf({ id: 1, body: { x: 1, y: [1, { b: 2, a: 1 }] } }, 0);
		const b = await expressions.versionOf({ body: { y: [1, { a: 1, b: 2 }], x: 1 }, id: 1 }, 0);
		const c = await expressions.versionOf({ id: 1, body: { x: 2, y: [1, { a: 1, b: 2 }] } }, 0);
		expect(a).toBe(b);
		expect(a).not.toBe(c);
		expect(a).toMatch(/^h:[0-9a-f]{32}$/);
		expect(contentHash({ a: undefined, b: 1 })).toBe(contentHash({ b: 1 }));
	});
});

describe('keyItems', () => {
	it('keys every item with its position and, when asked, its version', async () => {
		const expressions = new PollExpressions({ items: 'messages', id: 'uid', version: 'flags' });
		const keyed = await expressions.keyItems(
			{ messages: [{ uid: 10, flags: 'seen' }, { uid: 11 }] },
			{ withVersion: false },
		);
		expect(keyed).toEqual([
			{ item: { uid: 10, flags: 'seen' }, key: 10, index: 0 },
			{ item: { uid: 11 }, key: 11, index: 1 },
		]);
		await expect(
			expressions.keyItems(
				{ messages: [{ uid: 10, flags: 'seen' }, { uid: 11 }] },
				{ withVersion: true },
			),
		).rejects.toThrow(/^Item 1: "«version»" gave no value/);
	});

	it('keys 10,000 items by a plain field path without evaluating JSONata per item', async () => {
		const expressions = new PollExpressions({ items: 'data', id: 'meta.id' });
		const data = Array.from({ length: 10_000 }, (_, i) => ({
			meta: { id: `msg-${i}` },
			subject: `Subject ${i}`,
		}));
		evaluations = 0;
		const keyed = await expressions.keyItems({ data }, { withVersion: true });
		expect(keyed[9_999]).toMatchObject({ key: 'msg-9999', index: 9_999 });
		// Once for `data` (a list is JSONata's to return), never for an item's key.
		expect(evaluations).toBe(1);
		// A path that maps over an array is JSONata's to evaluate: once per item.
		const mapped = new PollExpressions({ items: 'data', id: 'tags.name' });
		evaluations = 0;
		const tagged = await mapped.keyItems(
			{ data: [{ tags: [{ name: 'a' }] }, { tags: [{ name: 'b' }] }] },
			{ withVersion: false },
		);
		expect(tagged.map((item) => item.key)).toEqual(['a', 'b']);
		expect(evaluations).toBe(1 + 2);
	});
});

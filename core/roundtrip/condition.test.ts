import { compileResumeCondition } from './condition';

const parts = (status: unknown) => ({ body: { status }, headers: {}, query: {} });

describe('compileResumeCondition', () => {
	const condition = compileResumeCondition('body.status in ["signed", "declined"]');

	test('a callback resumes only when the condition is exactly true', async () => {
		await expect(condition.matches(parts('signed'))).resolves.toEqual({ matched: true });
		await expect(condition.matches(parts('declined'))).resolves.toEqual({ matched: true });
		await expect(condition.matches(parts('viewed'))).resolves.toEqual({
			matched: false,
			why: 'body.status in ["signed", "declined"] is false, not true',
		});
	});

	test('a value that is not true (a string, nothing) or an evaluation error is no match', async () => {
		await expect(compileResumeCondition('body.status').matches(parts('signed'))).resolves.toEqual({
			matched: false,
			why: 'body.status is "signed", not true',
		});
		await expect(compileResumeCondition('body.missing').matches(parts('x'))).resolves.toMatchObject(
			{
				matched: false,
			},
		);
		const failing = compileResumeCondition('$number(body.status) > 1');
		await expect(failing.matches(parts('abc'))).resolves.toMatchObject({ matched: false });
	});

	test('a syntax error is thrown at compile time (validateSettings names the field)', () => {
		expect(() => compileResumeCondition('body.status in [')).toThrow();
	});
});

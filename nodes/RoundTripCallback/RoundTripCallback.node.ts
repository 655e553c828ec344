import {
	type IDataObject,
	type INodeType,
	type INodeTypeDescription,
	type IWebhookFunctions,
	type IWebhookResponseData,
	NodeConnectionTypes,
} from 'n8n-workflow';

import {
	authenticateAtFixedUrl,
	claimAtFixedUrl,
	compileCorrelationPath,
	correlationIdAtFixedUrl,
	DEFAULT_KEPT_PER_CREDENTIAL,
	FIXED_MATCH_KEY,
	forwardRequest,
	forwardUrl,
	keepCallback,
	type KeepingPlace,
	type KeepVerdict,
	NO_RUN_WAITS_ANY_MORE,
	type PartnerRequest,
	partnerHeaders,
	partnerQuery,
	ReplayMemory,
} from '../../core/roundtrip';
import { checkRange } from '../../core/configError';
import { inEditorWords } from '../shared/errors';
import { n8nHttpTransport } from '../shared/httpTransport';
import {
	deliverKeptCallbacks,
	type Partner,
	partnerName,
	waitingRunFor,
	watchKeptCallbacks,
} from '../shared/keptCallbacks';
import { announceMissing, executionsWithCustomData, keptCallbackPlace } from '../shared/n8nDoor';
import {
	CALLBACK_CREDENTIAL,
	CORRELATION_KEY,
	callbackAuthFrom,
	readCallback,
} from '../RoundTripWait/roundTripContext';
import { roundTripCallbackProperties } from './RoundTripCallbackDescription';

/** The fixed URL's replay memory where this n8n offers no shared place (capability callbackStore): this process's. */
const FIXED_URL_REPLAY = new ReplayMemory();

type Answer = (status: number, body: IDataObject, retryAfterSec?: number) => IWebhookResponseData;

/**
 * The fixed URL's replay memory (core/roundtrip/earlyCallbacks.ts claimAtFixedUrl): whether this
 * signed callback may go to `target` (a waiting execution, or "kept"): not when a copy of it went to
 * another. In n8n's database where it offers a place (every process), else in this process.
 */
async function mayGoTo(
	place: KeepingPlace | undefined,
	partner: Partner,
	verdict: { replayKey?: string; replayUntilMs?: number },
	target: string,
): Promise<boolean> {
	const { replayKey, replayUntilMs = Date.now() } = verdict;
	if (replayKey === undefined) return true; // token and basic auth: nothing signed to tell copies by
	if (place)
		return await claimAtFixedUrl(place, partner.credentialId, replayKey, target, replayUntilMs);
	return FIXED_URL_REPLAY.claim(
		`${partner.credentialId}:${replayKey}`,
		target,
		replayUntilMs,
		Date.now(),
	);
}

/**
 * A callback kept for a credential while a run waits for its id under another credential (a copy of
 * this one, same secret): that run never gets it. Said in n8n's log, naming both, so the
 * misconfiguration is found before the run times out.
 */
async function warnOtherCredentials(
	context: IWebhookFunctions,
	partner: Partner,
	correlationId: string,
): Promise<void> {
	const runs = (await executionsWithCustomData(CORRELATION_KEY, correlationId)) ?? [];
	for (const run of runs) {
		const match = run.keyValues[FIXED_MATCH_KEY];
		if (run.status !== 'waiting' || match === undefined) continue;
		const other = match.slice(0, match.indexOf(':'));
		if (other !== partner.credentialId)
			context.logger.warn(
				`Round-Trip Callback: a callback for id ${JSON.stringify(correlationId)} came with ${partnerName(partner)} and is kept for a Round-Trip Wait with that credential, but execution ${run.executionId} waits for this id with another credential (id ${other}): it does not get this callback. Give that Round-Trip Wait the same credential as the Round-Trip Callback`,
			);
	}
}

/** What keeping a callback here needs: the place, the partner, the id, the request, the fixed URL, the bound. */
interface KeepHere {
	place: KeepingPlace | undefined;
	partner: Partner;
	correlationId: string;
	request: PartnerRequest;
	fixedUrl: string;
	keptAtMost: number;
}

/** Keeps a callback no run has waited for yet (core/roundtrip/earlyCallbacks.ts keepCallback) and answers. */
async function keepHere(
	context: IWebhookFunctions,
	here: KeepHere,
	answer: Answer,
): Promise<IWebhookResponseData> {
	const notKept = (reason: string, status: number, retryAfterSec?: number) =>
		answer(
			status,
			{
				error: `no run is waiting for this id, and it could not be kept: ${reason}`,
				waiting: false,
			},
			retryAfterSec,
		);
	if (!here.place) return notKept('this n8n offers no place to keep it', 503, 60);
	const forWhom = { credentialId: here.partner.credentialId, correlationId: here.correlationId };
	const kept = await keepCallback(here.place, forWhom, here.request, Date.now(), here.keptAtMost);
	if (!kept.kept) return notKept(kept.reason, kept.status, kept.retryAfterSec);
	await warnOtherCredentials(context, here.partner, here.correlationId);
	return await answerKept(context, here, kept, answer);
}

/**
 * The answer to a callback just kept: 202, it is kept for the run that will wait for its id. A run
 * that began to wait meanwhile may have looked for kept callbacks before this one was there: looked
 * up again, and if one waits now, it is handed what is kept for it here; the partner then gets the
 * run's answer to this callback, or 410 when the run resumed with one kept before it (unless the run
 * itself claimed it first: still 202, it is on its way).
 */
async function answerKept(
	context: IWebhookFunctions,
	{ place, partner, correlationId, fixedUrl }: KeepHere,
	kept: Extract<KeepVerdict, { kept: true }>,
	answer: Answer,
): Promise<IWebhookResponseData> {
	const wait = await waitingRunFor(context.logger, partner, correlationId);
	const url = wait?.ok ? forwardUrl(wait, fixedUrl) : undefined;
	const deliveries =
		wait?.ok && url && place
			? await deliverKeptCallbacks(
					context,
					place,
					partner,
					{ url, executionId: wait.executionId },
					correlationId,
				)
			: [];
	const handed = deliveries.find((delivery) => delivery.key === kept.key);
	// Dropped: the run resumed with a callback kept before this one, which is then a copy after the resume.
	if (handed?.dropped) return answer(410, { error: NO_RUN_WAITS_ANY_MORE, waiting: false });
	if (handed?.answer) {
		let body: IDataObject;
		try {
			body = JSON.parse(handed.answer.body) as IDataObject;
		} catch {
			body = { answer: handed.answer.body };
		}
		return answer(handed.answer.status, body);
	}
	return answer(202, {
		kept: true,
		resumed: false,
		keptUntil: new Date(kept.keptUntilMs).toISOString(),
		reason: kept.duplicate
			? 'no run waits for this id yet: the same callback is kept already for the run that waits for it'
			: 'no run waits for this id yet: the callback is kept for the run that waits for it',
	});
}

/** Kept Callbacks at Most: this credential's bound on kept callbacks (core/roundtrip/earlyCallbacks.ts). */
function keptAtMostOf(context: IWebhookFunctions): number {
	const value = context.getNodeParameter('keptAtMost', DEFAULT_KEPT_PER_CREDENTIAL);
	return checkRange('keptAtMost', value, { min: 1, max: 100_000, whole: true });
}

/** The partner's request as a waiting run receives it: its headers without the credential's, its query, body, address, replay key. */
function partnerRequestOf(
	partner: Partner,
	inbound: Awaited<ReturnType<typeof readCallback>>,
	verdict: { replayKey?: string; replayUntilMs?: number },
): PartnerRequest {
	return {
		headers: partnerHeaders(partner.auth, inbound.headers),
		query: partnerQuery(inbound.query),
		body: inbound.rawBody.toString('utf8'),
		...(inbound.address === undefined ? {} : { address: inbound.address }),
		...(verdict.replayKey === undefined
			? {}
			: { replayKey: verdict.replayKey, replayUntilMs: verdict.replayUntilMs }),
	};
}

// The path is registered with n8n when the workflow is published; nothing to create at the partner
// (the administrator registers the URL there once). It starts no run: it resumes waiting ones.
// eslint-disable-next-line @n8n/community-nodes/webhook-lifecycle-complete
export class RoundTripCallback implements INodeType {
	description: INodeTypeDescription = {
		displayName: 'Round-Trip Callback',
		name: 'roundTripCallback',
		icon: { light: 'file:roundTripCallback.svg', dark: 'file:roundTripCallback.dark.svg' },
		group: ['trigger'],
		version: 1,
		subtitle: '={{"POST /webhook/" + $parameter["path"]}}',
		description:
			"One fixed callback URL for a partner: resumes the Round-Trip Wait waiting for the callback's correlation ID, in any workflow",
		defaults: { name: 'Round-Trip Callback' },
		inputs: [],
		outputs: [NodeConnectionTypes.Main],
		credentials: [{ name: CALLBACK_CREDENTIAL, required: true }],
		webhooks: [
			{
				name: 'default',
				httpMethod: 'POST',
				responseMode: 'onReceived',
				path: '={{$parameter["path"]}}',
				isFullPath: true,
			},
		],
		properties: roundTripCallbackProperties,
	};

	async webhook(this: IWebhookFunctions): Promise<IWebhookResponseData> {
		const response = this.getResponseObject();
		const answer: Answer = (status, body, retryAfterSec) => {
			if (retryAfterSec !== undefined) response.set('Retry-After', String(retryAfterSec));
			response.status(status).json(body);
			return { noWebhookResponse: true };
		};
		const refuse = (status: number, error: string, waiting: boolean) =>
			answer(status, { error, waiting });
		try {
			const n8n = announceMissing(this, 'callback');
			const inbound = await readCallback(this);
			const auth = callbackAuthFrom(await this.getCredentials(CALLBACK_CREDENTIAL));
			// First, before anything is looked up: an unauthenticated caller learns nothing about any run.
			const authenticated = authenticateAtFixedUrl(auth, inbound, Date.now());
			if (!authenticated.ok) return refuse(authenticated.status, authenticated.reason, true);
			const path = compileCorrelationPath(this.getNodeParameter('correlationIdPath') as string);
			const id = await correlationIdAtFixedUrl(auth, path, inbound);
			if (!id.ok) return refuse(id.status, id.reason, true);
			const credential = this.getNode().credentials?.[CALLBACK_CREDENTIAL];
			const partner: Partner = {
				credentialId: String(credential?.id),
				credentialName: credential?.name,
				auth,
			};
			const place = n8n.callbackStore ? keptCallbackPlace() : undefined;
			if (place) watchKeptCallbacks(this, partner);
			const wait = n8n.executionLookup
				? await waitingRunFor(this.logger, partner, id.id)
				: undefined;
			if (!wait) return refuse(503, 'this n8n offers no way to find the waiting run', true);
			const target = wait.ok ? `execution ${wait.executionId}` : wait.status === 404 ? 'kept' : '';
			if (target && !(await mayGoTo(place, partner, authenticated, target)))
				return refuse(
					403,
					'this signed callback was received at this fixed URL already and went to another wait (or was kept for one): a copy is not accepted',
					false,
				);
			const request = partnerRequestOf(partner, inbound, authenticated);
			const fixedUrl = this.getNodeWebhookUrl('default') ?? '';
			if (!wait.ok && wait.status === 404) {
				const keptAtMost = keptAtMostOf(this);
				const here = { place, partner, correlationId: id.id, request, fixedUrl, keptAtMost };
				return await keepHere(this, here, answer);
			}
			if (!wait.ok) return refuse(wait.status, wait.reason, false);
			const url = forwardUrl(wait, fixedUrl);
			if (!url)
				return refuse(500, `the run waiting for this id keeps no callback URL of this n8n`, true);
			// The waiting Round-Trip Wait judges it as any callback (its checks, its Resume Condition, n8n's resume-once).
			const forwarded = await n8nHttpTransport(this, { auth: { kind: 'none' } })(
				forwardRequest(
					auth,
					url,
					request,
					{ executionId: wait.executionId, correlationId: id.id },
					Math.floor(Date.now() / 1000),
				),
			);
			response.status(forwarded.status);
			response.type(forwarded.headers['content-type'] ?? 'application/json').send(forwarded.body);
			return { noWebhookResponse: true };
		} catch (error) {
			return refuse(
				500,
				`The callback could not be checked: ${inEditorWords(error.message, this.getNode())}`,
				true,
			);
		}
	}
}

import {
	type IDataObject,
	type IExecuteFunctions,
	type INodeExecutionData,
	type INodeType,
	type INodeTypeDescription,
	type IWebhookFunctions,
	type IWebhookResponseData,
	NodeConnectionTypes,
} from 'n8n-workflow';

import {
	callbackUrlFor,
	checkCallbackBinding,
	compileCorrelationPath,
	judgeCallback,
	judgeNotice,
	newCorrelationId,
	newWait,
	NOTICE_HEADER,
	resumeDeadline,
	timedOutItem,
	validateCallbackAuth,
	validateSettings,
} from '../../core/roundtrip';
import { inEditorWords, toNodeError } from '../shared/errors';
import { HTTP_CREDENTIAL } from '../shared/httpTransport';
import { announceMissing } from '../shared/n8nDoor';
import { genericCredentials } from '../shared/parameters';
import {
	CALLBACK_CREDENTIAL,
	REPLAY_MEMORY,
	RESUMED_WAITS,
	callbackAuthFrom,
	claimKeptCallbacksOnceWaiting,
	failFromNotice,
	keepCorrelationIdForFiltering,
	keepFixedUrlMatch,
	keepWaitRecord,
	executionReplayLogOf,
	leaveTimeoutBy,
	partnerOf,
	readCallback,
	requireOneItem,
	unmetResumeCondition,
	waitRecordOf,
	readSettings,
	responseBodyOf,
	roundTripCallbackApiTest,
	sendForPartnerId,
	sendRequest,
} from './roundTripContext';
import { roundTripWaitProperties } from './RoundTripWaitDescription';

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
		subtitle:
			'={{$parameter["mode"] === "sendAndWait" ? "Send, then wait for callback" : "Wait for callback"}}',
		description:
			"Pauses the run until the external system calls back with this run's correlation ID, authenticated",
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
			...genericCredentials({ mode: ['sendAndWait'] }),
		],
		webhooks: [
			{
				name: 'default',
				httpMethod: 'POST',
				responseMode: 'onReceived',
				// An accepted callback is answered by n8n once it has moved the run out of "waiting":
				// a second callback racing it gets n8n's error instead of a 200 for a resume that never happens.
				responseCode: '={{$parameter["responseCode"]}}',
				responseData: '',
				path: '',
				restartWebhook: true,
			},
		],
		properties: roundTripWaitProperties,
	};

	methods = { credentialTest: { roundTripCallbackApiTest } };

	async execute(this: IExecuteFunctions): Promise<INodeExecutionData[][]> {
		requireOneItem(this);
		// What this n8n offers the node (n8nDoor.ts); what it lacks is said once, and the node does without.
		const n8n = announceMissing(this, 'execute');
		try {
			const settings = validateSettings(readSettings(this));
			const callbackAuth = callbackAuthFrom(await this.getCredentials(CALLBACK_CREDENTIAL));
			validateCallbackAuth(callbackAuth);
			checkCallbackBinding(settings, callbackAuth);
			const sentId = settings.correlationId ?? newCorrelationId();
			const waitStartedAt = Date.now();
			const deadline = resumeDeadline(waitStartedAt, settings.timeout);
			const wait = newWait(sentId, waitStartedAt, deadline, settings.mode === 'sendAndWait');
			// The wait is kept with this node's entry of the execution's stack (see keepWaitRecord): checked
			// before anything is sent, so a wait that could not be kept fails here instead of waiting in vain.
			const executeData = this.getExecuteData();
			keepWaitRecord(this, executeData, wait);
			const callbackUrl = callbackUrlFor(
				this.evaluateExpression('{{ $execution.resumeUrl }}', 0) as string,
				wait.waitId,
			);
			// Kept before anything is sent (n8n may keep no more custom data), again with the partner's id below.
			const partner = partnerOf(this, callbackAuth);
			let fixedMatch =
				settings.callbackVia === 'fixed'
					? keepFixedUrlMatch(this, partner, sentId, callbackUrl)
					: undefined;
			// The partner's own id, known once it answers: the request goes out now; the run waits for that id.
			const answered =
				settings.answerIdPath &&
				(await sendForPartnerId(this, settings.request!, settings.answerIdPath, {
					correlationId: sentId,
					callbackUrl,
				}));
			if (answered) {
				keepWaitRecord(this, executeData, { ...wait, correlationId: answered.partnerId });
				fixedMatch = keepFixedUrlMatch(this, partner, answered.partnerId, callbackUrl);
			}
			const correlationId = answered ? answered.partnerId : sentId;

			const waiting: IDataObject = {
				waiting: true,
				correlationId,
				callbackUrl,
				callbackMethod: 'POST',
				deadline: new Date(deadline).toISOString(),
				correlationIdLocation: settings.correlationPath.expression,
			};
			// First of the node's handlers once n8n has saved the wait: the match written, then what was kept for it.
			if (fixedMatch)
				claimKeptCallbacksOnceWaiting(this, fixedMatch, partner, correlationId, callbackUrl);
			if (answered) waiting.request = answered.request;
			else if (settings.request)
				waiting.request = await sendRequest(this, settings.request, {
					correlationId,
					callbackUrl,
					wait,
					callbackAuth,
					afterSave: n8n.resumeControl,
				});

			keepCorrelationIdForFiltering(this, correlationId);
			leaveTimeoutBy(
				executeData,
				timedOutItem(correlationId, waitStartedAt, deadline, deadline),
				n8n.resumeControl,
			);
			await this.putExecutionToWait(new Date(deadline));
			return [[{ json: waiting, pairedItem: { item: 0 } }], []];
		} catch (error) {
			throw toNodeError(this.getNode(), error, 0);
		}
	}

	async webhook(this: IWebhookFunctions): Promise<IWebhookResponseData> {
		const response = this.getResponseObject();
		// n8n resumes the run whatever a throwing webhook() meant, so every failure here is answered and the run keeps waiting.
		const refuse = (status: number, error: string, waiting = true): IWebhookResponseData => {
			response.status(status).json({ error, waiting });
			return { noWebhookResponse: true };
		};
		try {
			const n8n = announceMissing(this, 'webhook');
			const wait = waitRecordOf(this);
			if (!wait)
				return refuse(409, 'this execution is not waiting in a Round-Trip Wait node', false);
			const inbound = await readCallback(this);
			const auth = callbackAuthFrom(await this.getCredentials(CALLBACK_CREDENTIAL));

			// The node's own "request failed" notice: the callback's checks first, then this wait's notice key.
			const notice = inbound.headers[NOTICE_HEADER];
			if (notice !== undefined) {
				const verdict = judgeNotice({ auth, wait }, inbound, String(notice), Date.now());
				if (!verdict.ok) return refuse(verdict.status, verdict.reason, verdict.status !== 410);
				return failFromNotice(this, inbound.rawBody.toString('utf8'), refuse);
			}

			const judgement = await judgeCallback(
				{
					auth,
					correlationPath: compileCorrelationPath(
						this.getNodeParameter('correlationIdPath') as string,
					),
					expectedCorrelationId: wait.correlationId,
					wait,
					replay: REPLAY_MEMORY,
					executionReplay: executionReplayLogOf(this),
					executionId: this.getExecutionId(),
				},
				inbound,
				Date.now(),
			);
			if (!judgement.ok)
				return refuse(judgement.status, judgement.reason, judgement.status !== 410);
			// A status event the run does not wait for: received (2xx, so the partner does not resend it), no resume.
			const unmet = await unmetResumeCondition(this, judgement.receipt);
			if (unmet) {
				response.status(202).json({ resumed: false, waiting: true, reason: unmet });
				return { noWebhookResponse: true };
			}
			// n8n 2.x resumes a waiting execution once (it updates it only while still waiting); n8n 1.x
			// (no resume control, n8nDoor.ts) may resume it again: refused here.
			if (!n8n.resumeControl && !RESUMED_WAITS.claim(wait.noticeKey, wait.deadlineMs, Date.now())) {
				return refuse(409, 'this wait was already resumed by another callback', false);
			}
			// No response here: n8n answers (Response Code, this body) once the run has left "waiting".
			return {
				workflowData: [[{ json: judgement.receipt as unknown as IDataObject }], []],
				webhookResponse: responseBodyOf(this.getNodeParameter('responseBody')),
			};
		} catch (error) {
			return refuse(
				500,
				`The callback could not be checked: ${inEditorWords(error.message, this.getNode())}`,
			);
		}
	}
}

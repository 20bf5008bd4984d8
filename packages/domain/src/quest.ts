export const ACTION_STATUSES = ['active', 'deactivated'] as const;
export type ActionStatus = (typeof ACTION_STATUSES)[number];

export interface QuestWindow {
  startAt: Date;
  endAt: Date;
}

/** The active window is half-open: [start, end). */
export function isWithinWindow(quest: QuestWindow, now: Date): boolean {
  const t = now.getTime();
  return t >= quest.startAt.getTime() && t < quest.endAt.getTime();
}

/** A quest is active when the current time is inside its window and its action type is active. */
export function isQuestActive(quest: QuestWindow & { actionStatus: ActionStatus }, now: Date): boolean {
  return quest.actionStatus === 'active' && isWithinWindow(quest, now);
}

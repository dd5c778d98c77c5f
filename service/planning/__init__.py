"""Planning and dispatch: turn schedules into admitted runs whose intents are queued.

One pass (``ticker.Ticker.tick_once``; a minute apart on AWS, the local
stack's interval locally) does, in order:

1. **Begin** a ``pass_state.PassState``: the pass's reports, deadline, the
   room each shard has for direct admission, the intents it sent, and the
   store's memory of its planning (``Store.plan_session``). It is dropped
   when the pass ends.
2. **Plan** (``planner.Planner.plan``): read the schedules whose next slot
   falls within the lookahead and store their slots up to it, with the
   advance of ``next_due``, a page at a time, in the order store, send,
   advance. ``due`` says what each slot is stored as (waiting, admitted, or
   closed by the start decision); ``outbox.DirectAdmission`` admits as it
   stores, in the shards dispatch says are ready.
3. **Dispatch** (``dispatch.Dispatcher.dispatch``): in the shards this process
   leases when it has work there, admit or close the pending records due
   within the ahead reach, oldest first, and send the intents of the
   admitted (``outbox``: sent, then marked sent).
4. **Plan early** (``early.PlanEarly``), when the budget leaves time:
   seeds and crowded instants beyond the lookahead, up to the early reach,
   so a crowd is planned over the passes that see it coming.
5. **Beat** the tick's heartbeat and return the report; the tick handler
   then starts the surges due before its next invocation (``surge``).

The start decision is ``domain/start.py``; ``judge`` is how the tick applies
it before the conditional writes that check what it assumed. The settings
and their bounds are ``config.TickConfig``. ``ticker.PlanNow`` is the same
planning for one schedule, run by the API call that created, edited or
resumed it.
"""

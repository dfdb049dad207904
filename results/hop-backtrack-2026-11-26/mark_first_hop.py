import asyncio, sys
sys.path.insert(0, '.')
from core.settings import load_settings
from core.run import open_run
from agents.hop_mark import mark_messages, describing_phrase
from models.structured import message_text

QS = ["Who was honored with the award Dhondo Keshav Karve received prior to becoming president of India?",
      "When was the sibling of Alice de Lusignan, Countess of Surrey crowned?"]

async def main():
    async with open_run(load_settings(), connections={}) as run:
        model = run.model("master").bind(max_tokens=96, temperature=0)
        for q in QS:
            reply = message_text(await model.ainvoke(mark_messages(q)))
            print(repr(reply), '->', describing_phrase(reply, q))
asyncio.run(main())

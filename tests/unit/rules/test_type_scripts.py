"""The type heuristics of a flagged note without a kind (consolidate.rules.memory_types.infer_type) and its
reason (fields_from_text) on text in several scripts: a Japanese decision note was typed
``constraint`` (new-user finding of issue 15): the decision words were English and a few others."""

from __future__ import annotations

import pytest

from consolidate.rules.memory_types import fields_from_text, infer_type

#: One decision with its reason per language, as an agent writes it (chose X over Y because Z).
DECISIONS = {
    "ja": "サーバーが不要なので、PostgresではなくSQLiteを選んだ",
    "ja-rule-word": "常に同期が必要なため、Redisの代わりにPostgresを採用することにした",
    "ja-plain": "ビルドが速いのでwebpackをやめてviteにした",
    "zh": "因为不需要服务器，我们选了SQLite而不是Postgres",
    "zh-tw": "因為不需要伺服器，我們選擇了SQLite而不是Postgres",
    "ko": "서버가 필요 없기 때문에 Postgres 대신 SQLite를 선택했다",
    "ar": "اخترنا SQLite بدلاً من Postgres لأنه لا يحتاج إلى خادم",
    "he": "בחרנו ב-SQLite במקום Postgres כי הוא לא צריך שרת",
    "ru": "Выбрали SQLite вместо Postgres, потому что не нужен сервер",
    "uk": "Обрали SQLite замість Postgres, бо не потрібен сервер",
    "hi": "हमने Postgres के बजाय SQLite चुना क्योंकि इसे सर्वर की ज़रूरत नहीं है",
    "th": "เราเลือก SQLite แทน Postgres เพราะไม่ต้องใช้เซิร์ฟเวอร์",
    "tr": "Sunucu gerektirmediği için Postgres yerine SQLite'ı seçtik",
    "vi": "Chúng tôi chọn SQLite thay vì Postgres vì nó không cần máy chủ",
    "es": "Elegimos SQLite en lugar de Postgres porque no necesita servidor",
    "pt": "Escolhemos SQLite em vez de Postgres porque não precisa de servidor",
    "fr": "Nous avons choisi SQLite plutôt que Postgres parce qu'il ne faut pas de serveur",
    "de": "Wir haben uns für SQLite statt Postgres entschieden, weil es keinen Server braucht",
    "pl": "Wybraliśmy SQLite zamiast Postgresa, ponieważ nie potrzebuje serwera",
}

#: Rules (never / always / must) in the same languages: still constraints, not decisions.
CONSTRAINTS = {
    "ja": "本番のデータベースには絶対に直接書き込んではいけない",
    "zh": "绝对不要直接写入生产数据库",
    "ko": "운영 데이터베이스에 절대 직접 쓰면 안 된다",
    "ar": "يجب ألا نكتب مباشرة في قاعدة بيانات الإنتاج",
    "ru": "Никогда не писать напрямую в рабочую базу данных",
    "hi": "प्रोडक्शन डेटाबेस में कभी भी सीधे नहीं लिखना चाहिए",
    "th": "ห้ามเขียนลงฐานข้อมูลจริงโดยตรงเด็ดขาด",
    "tr": "Üretim veritabanına asla doğrudan yazma",
    "es": "Nunca escribir directamente en la base de datos de producción",
    "de": "Niemals direkt in die Produktionsdatenbank schreiben",
}


@pytest.mark.parametrize("lang", sorted(DECISIONS))
def test_a_decision_is_typed_a_decision_in_every_script(lang):
    type_, why = infer_type(DECISIONS[lang])
    assert type_ == "decision", (lang, type_, why)


@pytest.mark.parametrize("lang", sorted(DECISIONS))
def test_a_decisions_reason_is_found_in_every_script(lang):
    assert fields_from_text("decision", DECISIONS[lang]).get("reason"), lang


@pytest.mark.parametrize("lang", sorted(CONSTRAINTS))
def test_a_rule_stays_a_constraint_in_every_script(lang):
    assert infer_type(CONSTRAINTS[lang])[0] == "constraint", lang

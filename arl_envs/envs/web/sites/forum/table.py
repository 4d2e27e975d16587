"""The forum's template table: :data:`TEMPLATES` (17 info, 9 nav, 12 change) in a fixed order."""

from __future__ import annotations

from arl_envs.envs.web.sites.forum.changes import CHANGE_TEMPLATES
from arl_envs.envs.web.sites.forum.tasks import (
    nav_author,
    nav_forum,
    nav_post,
    nav_search,
    nav_top_post,
    forum_question,
    post_question,
    search_count,
    user_question,
)
from arl_envs.envs.web.sites.tasks import Template

_BY_COMMENT = "SELECT u.username FROM comments c JOIN users u ON u.id=c.user_id WHERE c.post_id=?"

TEMPLATES: list[Template] = [
    # information seeking: one post (7)
    post_question("post-author", 'Who wrote the post titled "{title}"? Give the username.',
                  "SELECT u.username FROM posts p JOIN users u ON u.id=p.user_id WHERE p.id=?"),
    post_question("post-score", 'What is the current score of the post "{title}"?', "SELECT score FROM posts WHERE id=?"),
    post_question("post-comment-count", 'How many comments does the post "{title}" have?',
                  "SELECT COUNT(*) FROM comments WHERE post_id=?"),
    post_question("post-date", 'On which date was the post "{title}" published? Answer as YYYY-MM-DD.',
                  "SELECT substr(created, 1, 10) FROM posts WHERE id=?"),
    post_question("post-subforum", 'In which subforum was the post "{title}" published?',
                  "SELECT f.name FROM posts p JOIN forums f ON f.id=p.forum_id WHERE p.id=?"),
    post_question("top-comment-author", 'Who wrote the highest-scoring comment on the post "{title}"? Give the username.',
                  _BY_COMMENT + " AND c.score=(SELECT MAX(score) FROM comments WHERE post_id=c.post_id)",
                  "(SELECT COUNT(*) FROM comments c WHERE c.post_id=p.id) >= 2"),
    post_question("first-commenter", 'Who wrote the first comment on the post "{title}"? Give the username.',
                  _BY_COMMENT + " ORDER BY c.id LIMIT 1", "(SELECT COUNT(*) FROM comments c WHERE c.post_id=p.id) >= 1"),
    # information seeking: one subforum (5)
    forum_question("forum-top-post", "What is the title of the highest-scoring post in the {forum} subforum?",
                   "SELECT title FROM posts WHERE forum_id=?1 AND score=(SELECT MAX(score) FROM posts WHERE forum_id=?1)",
                   "top"),
    forum_question("forum-most-commented", "Which post in the {forum} subforum has the most comments? Give its title.",
                   "SELECT title FROM posts p WHERE forum_id=?1 AND (SELECT COUNT(*) FROM comments c WHERE c.post_id=p.id)"
                   " = (SELECT MAX(n) FROM (SELECT COUNT(c.id) n FROM posts p2 LEFT JOIN comments c ON c.post_id=p2.id "
                   "WHERE p2.forum_id=?1 GROUP BY p2.id))", "comments"),
    forum_question("forum-newest-post", "What is the title of the newest post in the {forum} subforum?",
                   "SELECT title FROM posts WHERE forum_id=? ORDER BY id DESC LIMIT 1"),
    forum_question("forum-post-count", "How many posts are there in the {forum} subforum?",
                   "SELECT COUNT(*) FROM posts WHERE forum_id=?"),
    forum_question("forum-moderator", "Who moderates the {forum} subforum? Give the username.",
                   "SELECT u.username FROM forums f JOIN users u ON u.id=f.moderator_id WHERE f.id=?"),
    # information seeking: one user (4) and search (1)
    user_question("user-karma", "What is {user}'s karma on the forum?",
                  "SELECT (SELECT COALESCE(SUM(score),0) FROM posts WHERE user_id=:u) + "
                  "(SELECT COALESCE(SUM(score),0) FROM comments WHERE user_id=:u)"),
    user_question("user-post-count", "How many posts has {user} written?", "SELECT COUNT(*) FROM posts WHERE user_id=:u"),
    user_question("user-comment-count", "How many comments has {user} written?",
                  "SELECT COUNT(*) FROM comments WHERE user_id=:u"),
    user_question("user-joined", "When did {user} join the forum? Answer as YYYY-MM-DD.",
                  "SELECT joined FROM users WHERE id=:u"),
    search_count(),
    # navigation (9)
    nav_forum("open-subforum", "Open the {forum} subforum.", "new"),
    nav_forum("subforum-top", "Show the posts of the {forum} subforum sorted by score, highest first.", "top"),
    nav_forum("subforum-most-commented", "Show the posts of the {forum} subforum with the most comments first.",
              "comments"),
    nav_forum("subforum-page", "Open page {page} of the {forum} subforum (newest posts first).", "new", pages=True),
    nav_post(),
    nav_author(),
    nav_top_post(),
    nav_search("search-in-subforum", 'Search for "{word}" within the {forum} subforum.', True, "relevance"),
    nav_search("search-top", 'Search all subforums for "{word}" and sort the results by score.', False, "top"),
    # content changes (12)
    *CHANGE_TEMPLATES,
]
